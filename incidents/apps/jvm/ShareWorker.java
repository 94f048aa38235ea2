import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A queue worker on a share group (KIP-932): poll a batch, work on each record, acknowledge.
 *
 * <pre>ShareWorker [--work-ms MS] [--slow-every N] [--slow-ms MS] [--timeout-ms MS]
 *             [--delivery-limit N] [--dead-letter]</pre>
 *
 * The JVM twin of {@code share_worker.py}: {@code REPLAY_GROUP_ID} is a share group, read with
 * {@code KafkaShareConsumer} in explicit acknowledgement mode. Each record takes
 * {@code --work-ms}; one in {@code --slow-every} (by its event_id, the same records as the
 * Python app) needs {@code --slow-ms}, and a call longer than {@code --timeout-ms} gives up.
 * A record worked on is written, then accepted; one that timed out is released for a retry
 * (the vulnerable service: at the delivery-count limit the broker archives it silently) or, with
 * {@code --dead-letter} on its last delivery ({@code --delivery-limit}), rejected and written
 * with a {@code dead_letter} header. The batch's acknowledgements go with {@code commitSync}.
 * Compiles against kafka-clients 3.9 too (the delivery count is read reflectively there).
 */
public final class ShareWorker {
    /** Consumer settings a share consumer refuses (it has no offsets and no static members). */
    private static final Set<String> NOT_FOR_SHARE = Set.of(
        "auto.offset.reset", "enable.auto.commit", "group.instance.id", "isolation.level",
        "partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms",
        "group.protocol", "group.remote.assignor", "auto.commit.interval.ms");

    public static void main(String[] args) throws Exception {
        double workMs = 0;
        double slowMs = 0;
        double timeoutMs = Double.POSITIVE_INFINITY;
        int slowEvery = 0;
        int deliveryLimit = 5;
        boolean deadLetter = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                case "--slow-every" -> slowEvery = Integer.parseInt(args[++i]);
                case "--slow-ms" -> slowMs = Double.parseDouble(args[++i]);
                case "--timeout-ms" -> timeoutMs = Double.parseDouble(args[++i]);
                case "--delivery-limit" -> deliveryLimit = Integer.parseInt(args[++i]);
                case "--dead-letter" -> deadLetter = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Contract.start("ShareWorker");
        try (KafkaShareConsumer<byte[], byte[]> consumer = shareConsumer();
             KafkaProducer<byte[], byte[]> producer = Contract.producer(null)) {
            consumer.subscribe(List.of(Contract.INPUT));
            while (!Contract.stopping()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    double work = isSlow(record, slowEvery) ? slowMs : workMs;
                    Contract.work(Math.min(work, timeoutMs));  // the call, or its timeout
                    if (work <= timeoutMs) {
                        producer.send(Contract.result(Contract.OUTPUT, record));
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                    } else if (deadLetter && deliveryCount(record) >= deliveryLimit) {
                        ProducerRecord<byte[], byte[]> letter = Contract.result(Contract.OUTPUT, record);
                        letter.headers().add("dead_letter",
                            "downstream timeout".getBytes(StandardCharsets.UTF_8));
                        producer.send(letter);
                        consumer.acknowledge(record, AcknowledgeType.REJECT);
                    } else {  // a retry, as the vulnerable service thought
                        consumer.acknowledge(record, AcknowledgeType.RELEASE);
                    }
                }
                producer.flush();
                try {
                    Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
                    results.forEach((tp, error) -> error.ifPresent(e -> System.err.println(
                        "ShareWorker: acknowledgement refused for " + tp + ": " + e)));
                } catch (KafkaException e) {
                    System.err.println("ShareWorker: acknowledgements failed, going on: " + e);
                }
            }
        }
    }

    /** The share consumer: the incident's settings that a share group takes, explicit acks. */
    static KafkaShareConsumer<byte[], byte[]> shareConsumer() throws Exception {
        Properties config = new Properties();
        Properties settings = Contract.clientSettings();
        for (String name : settings.stringPropertyNames()) {
            if (ConsumerConfig.configNames().contains(name) && !NOT_FOR_SHARE.contains(name)) {
                config.put(name, settings.getProperty(name));
            }
        }
        config.put("share.acknowledgement.mode", "explicit");
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Contract.ENV.get("KAFKA_BOOTSTRAP_SERVERS"));
        config.put(ConsumerConfig.GROUP_ID_CONFIG, Contract.ENV.get("REPLAY_GROUP_ID"));
        return new KafkaShareConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Whether the record is one of the slow ones: SHA-1 of its event_id, as the Python app. */
    static boolean isSlow(ConsumerRecord<byte[], byte[]> record, int every) throws Exception {
        if (every <= 0) {
            return false;
        }
        Header id = record.headers().lastHeader("event_id");
        byte[] digest = MessageDigest.getInstance("SHA-1").digest(id == null ? new byte[0] : id.value());
        return new BigInteger(1, digest).mod(BigInteger.valueOf(every)).signum() == 0;
    }

    /** The record's delivery count (kafka-clients 4.0+); 1 where the release has none. */
    static int deliveryCount(ConsumerRecord<byte[], byte[]> record) {
        try {
            Object count = ConsumerRecord.class.getMethod("deliveryCount").invoke(record);
            return ((Optional<?>) count).map(c -> ((Number) c).intValue()).orElse(1);
        } catch (ReflectiveOperationException e) {
            return 1;
        }
    }

    private ShareWorker() {
    }
}
