import java.io.FileInputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A plain Kafka consumer-producer such as a team writes, with no instrumentation: it knows
 * only the environment variables of the app contract. It copies each input record's key and
 * value unchanged to the output topic (headers are not copied).
 *
 * <pre>
 * PlainApp [--work-ms N] [--transactional] [--exit-when-idle-s S] [--acks A]
 *          [--idempotence true|false] [--delivery-timeout-ms N]
 * </pre>
 *
 * Default: poll, do N ms of work per record, produce, commitSync; a refused commit is logged
 * and the loop goes on. --transactional: output and offsets in one transaction, any error
 * ends the process. --exit-when-idle-s: a batch job that exits 0 once no record came for S
 * seconds. --acks, --idempotence and --delivery-timeout-ms set its producer's own settings
 * (acks=all, idempotence on and Kafka's 120 s delivery timeout by default); the incident's
 * client settings reach only its consumer.
 */
public final class PlainApp {
    public static void main(String[] args) throws Exception {
        long workMs = 0;
        boolean transactional = false;
        double exitWhenIdleS = -1;
        Map<String, String> own = new HashMap<>(Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.LINGER_MS_CONFIG, "5"));
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--work-ms" -> workMs = Long.parseLong(args[++i]);
                case "--transactional" -> transactional = true;
                case "--exit-when-idle-s" -> exitWhenIdleS = Double.parseDouble(args[++i]);
                case "--acks" -> own.put(ProducerConfig.ACKS_CONFIG, args[++i]);
                case "--idempotence" -> own.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, args[++i]);
                case "--delivery-timeout-ms" -> {
                    own.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, args[++i]);
                    own.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
                            String.valueOf(Math.min(30_000, Integer.parseInt(args[i]) - 10)));
                }
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Map<String, String> env = System.getenv();
        String input = env.get("REPLAY_INPUT_TOPIC");
        String output = env.get("REPLAY_OUTPUT_TOPIC");

        Properties consumerConfig = new Properties();
        String properties = env.get("REPLAY_CLIENT_PROPERTIES");
        if (properties != null) {
            try (FileInputStream in = new FileInputStream(properties)) {
                consumerConfig.load(in);
            }
        }
        consumerConfig.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.get("KAFKA_BOOTSTRAP_SERVERS"));
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, env.get("REPLAY_GROUP_ID"));
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (transactional) {
            consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        }

        Properties producerConfig = new Properties();
        producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.get("KAFKA_BOOTSTRAP_SERVERS"));
        producerConfig.putAll(own);
        if (transactional) {
            String id = env.getOrDefault("REPLAY_TRANSACTIONAL_ID", UUID.randomUUID().toString());
            producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        }

        AtomicBoolean stopping = new AtomicBoolean(false);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            try {
                main.join(10_000);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));

        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (transactional) {
                producer.initTransactions();
            }
            consumer.subscribe(List.of(input));
            long lastRecord = System.nanoTime();
            while (!stopping.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    double idle = (System.nanoTime() - lastRecord) / 1e9;
                    if (exitWhenIdleS >= 0 && idle >= exitWhenIdleS) {
                        System.out.println("caught up: nothing new for " + idle + " s");
                        return;
                    }
                    continue;
                }
                lastRecord = System.nanoTime();
                if (transactional) {
                    producer.beginTransaction();
                }
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    if (workMs > 0) {
                        Thread.sleep(workMs);
                    }
                    producer.send(new ProducerRecord<>(output, record.key(), record.value()));
                    next.put(new TopicPartition(record.topic(), record.partition()),
                            new OffsetAndMetadata(record.offset() + 1));
                }
                if (transactional) {
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    producer.commitTransaction();
                    continue;
                }
                producer.flush();
                try {
                    consumer.commitSync(next);
                } catch (KafkaException e) {
                    System.out.println("commit refused, going on: " + e);
                }
            }
        }
    }

    private PlainApp() {
    }
}
