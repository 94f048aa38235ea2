import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * What every JVM reference app shares: the app contract's environment variables, the
 * incident's client settings, SIGTERM as a clean stop, and the output record.
 *
 * <p>No instrumentation: these apps know only the contract, so the harness judges them from
 * the brokers, the data and the supervisor, like any team's app.
 */
final class Contract {
    static final Map<String, String> ENV = System.getenv();
    static final String INPUT = ENV.get("REPLAY_INPUT_TOPIC");
    static final String OUTPUT = ENV.get("REPLAY_OUTPUT_TOPIC");

    private static final AtomicBoolean STOPPING = new AtomicBoolean(false);
    private static volatile boolean exiting;

    private Contract() {
    }

    /** Say which client release runs, and make SIGTERM end the main loop (then close). */
    static void start(String app) {
        System.err.println("kafka-clients " + clientVersion() + " (" + app + ")");
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            STOPPING.set(true);
            if (!exiting) {
                try {
                    main.join(10_000);
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                }
            }
        }));
    }

    /**
     * The kafka-clients release on the classpath, from the properties file its jar carries
     * (the class that reads it moved to an internal package in 4.4).
     */
    static String clientVersion() {
        Properties release = new Properties();
        try (InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                release.load(in);
            }
        } catch (IOException ignored) {
            // the version only labels the app's log
        }
        return release.getProperty("version", "unknown");
    }

    static boolean stopping() {
        return STOPPING.get();
    }

    /** End the process with {@code code} after an error the app does not survive. */
    static void exit(int code) {
        exiting = true;
        System.exit(code);
    }

    /** The incident's client settings ({@code REPLAY_CLIENT_PROPERTIES}), all of them. */
    static Properties clientSettings() throws IOException {
        Properties settings = new Properties();
        String path = ENV.get("REPLAY_CLIENT_PROPERTIES");
        if (path != null) {
            try (FileInputStream in = new FileInputStream(path)) {
                settings.load(in);
            }
        }
        return settings;
    }

    /** A consumer of the input topic: the incident's consumer settings over the app's own. */
    static KafkaConsumer<byte[], byte[]> consumer(Map<String, String> own) throws IOException {
        Properties config = new Properties();
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.putAll(own);
        Properties settings = clientSettings();
        for (String name : settings.stringPropertyNames()) {
            if (ConsumerConfig.configNames().contains(name)) {
                config.put(name, settings.getProperty(name));
            }
        }
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ENV.get("KAFKA_BOOTSTRAP_SERVERS"));
        config.put(ConsumerConfig.GROUP_ID_CONFIG, ENV.get("REPLAY_GROUP_ID"));
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * An idempotent producer (a retried send is never written twice), optionally transactional,
     * with the incident's producer settings on top.
     */
    static KafkaProducer<byte[], byte[]> producer(String transactionalId) throws IOException {
        Properties config = new Properties();
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        config.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        Properties settings = clientSettings();
        for (String name : settings.stringPropertyNames()) {
            if (ProducerConfig.configNames().contains(name)) {
                config.put(name, settings.getProperty(name));
            }
        }
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, ENV.get("KAFKA_BOOTSTRAP_SERVERS"));
        if (transactionalId != null) {
            config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** The output for one input: its key, value and headers (the event_id) unchanged. */
    static ProducerRecord<byte[], byte[]> result(String topic, ConsumerRecord<byte[], byte[]> in) {
        return new ProducerRecord<>(topic, null, in.key(), in.value(), in.headers());
    }

    /** The offsets to commit after {@code records}: one past the last of each partition. */
    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(
            Iterable<ConsumerRecord<byte[], byte[]>> records) {
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            next.put(new TopicPartition(record.topic(), record.partition()),
                    new OffsetAndMetadata(record.offset() + 1));
        }
        return next;
    }

    /** Sleep for the record's work (a database write, a call to another service). */
    static void work(double ms) throws InterruptedException {
        if (ms > 0) {
            long nanos = (long) (ms * 1_000_000);
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        }
    }
}
