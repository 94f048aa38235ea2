import java.io.FileInputStream;
import java.io.IOException;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * A Flink job that copies each input record to the output exactly once: Flink's Kafka source
 * (read_committed, resuming from the group's committed offsets) and its exactly-once Kafka
 * sink, whose records of a checkpoint stay in a Kafka transaction until the checkpoint
 * completes and the sink commits it.
 *
 * <p>It knows only the app contract's variables, like any team's job: the topics, the group,
 * the transactional id (the sink's prefix) and the incident's client settings, the consumer's
 * for the source and the producer's ({@code transaction.timeout.ms} among them) for the sink.
 * The cluster, its checkpoints and their restore are the harness's, as they would be a
 * deployment's.
 */
public class ExactlyOnceJob {

    /** One record as it travels: its key, value, time and {@code event_id} header. */
    public static class Record {
        public byte[] key;
        public byte[] value;
        public byte[] eventId;
        public long timestamp;

        public Record() {
        }
    }

    static final class FromKafka implements KafkaRecordDeserializationSchema<Record> {
        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> in, Collector<Record> out) {
            Record record = new Record();
            record.key = in.key();
            record.value = in.value();
            Header eventId = in.headers().lastHeader("event_id");
            record.eventId = eventId == null ? null : eventId.value();
            record.timestamp = in.timestamp();
            out.collect(record);
        }

        @Override
        public TypeInformation<Record> getProducedType() {
            return TypeInformation.of(Record.class);
        }
    }

    static final class ToKafka implements KafkaRecordSerializationSchema<Record> {
        private final String topic;

        ToKafka(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(Record record, KafkaSinkContext context, Long time) {
            RecordHeaders headers = new RecordHeaders();
            if (record.eventId != null) {
                headers.add("event_id", record.eventId);
            }
            return new ProducerRecord<>(topic, null, record.timestamp, record.key, record.value, headers);
        }
    }

    /** The incident's client settings that {@code names} knows ({@code REPLAY_CLIENT_PROPERTIES}). */
    static Properties settings(Set<String> names) throws IOException {
        Properties all = new Properties();
        String path = System.getenv("REPLAY_CLIENT_PROPERTIES");
        if (path != null) {
            try (FileInputStream in = new FileInputStream(path)) {
                all.load(in);
            }
        }
        Properties known = new Properties();
        for (String name : all.stringPropertyNames()) {
            if (names.contains(name)) {
                known.setProperty(name, all.getProperty(name));
            }
        }
        return known;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> env = System.getenv();
        String bootstrap = env.get("KAFKA_BOOTSTRAP_SERVERS");

        Properties consumer = settings(ConsumerConfig.configNames());
        consumer.setProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        KafkaSource<Record> source = KafkaSource.<Record>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(env.get("REPLAY_INPUT_TOPIC"))
                .setGroupId(env.get("REPLAY_GROUP_ID"))
                .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
                .setDeserializer(new FromKafka())
                .setProperties(consumer)
                .build();

        // the job's own transaction timeout, the broker's default maximum (Flink's default, an
        // hour, is refused by such a broker); the incident's, when it gives one, over it
        Properties producer = new Properties();
        producer.setProperty(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "900000");
        producer.putAll(settings(ProducerConfig.configNames()));
        KafkaSink<Record> sink = KafkaSink.<Record>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(new ToKafka(env.get("REPLAY_OUTPUT_TOPIC")))
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(env.get("REPLAY_TRANSACTIONAL_ID"))
                .setKafkaProducerConfig(producer)
                .build();

        StreamExecutionEnvironment job = StreamExecutionEnvironment.getExecutionEnvironment();
        job.fromSource(source, WatermarkStrategy.noWatermarks(), "input").uid("input")
                .sinkTo(sink).uid("output");
        job.execute("exactly-once copy");
    }
}
