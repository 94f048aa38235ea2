import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * The post's billing service: one charge in PostgreSQL per student onboarding event.
 *
 * <pre>Billing [--mode insert-then-commit|offsets-in-db|upsert] [--batch N] [--work-ms MS]</pre>
 *
 * The database is the contract's {@code REPLAY_JDBC_URL} (its tables made by the incident),
 * through {@code org.postgresql.Driver} on the classpath. {@code insert-then-commit} (the
 * post's code) inserts each event's charge on its own and commits the offsets after the batch:
 * a crash in the middle of a batch, or a rebalance, charges its first events again.
 * {@code offsets-in-db} commits the charges and the partitions' next
 * offsets ({@code consumer_positions}) in one database transaction and starts an assigned
 * partition where the table says; Kafka's commit afterwards only tells lag monitors.
 * {@code upsert} is the first with {@code ON CONFLICT (event_id) DO NOTHING}. A database error
 * ends the process; the supervisor restarts it as a deployment would.
 */
public final class Billing {
    static final String INSERT =
            "INSERT INTO charges (event_id, student, amount_cents) VALUES (?, ?, ?)";
    static final String UPSERT = INSERT + " ON CONFLICT (event_id) DO NOTHING";
    static final String POSITIONS = "SELECT kafka_partition, next_offset FROM consumer_positions"
            + " WHERE consumer_group = ? AND topic = ?";
    /** A partition's row, made at the batch's first offset when there is none, then locked. */
    static final String CLAIM = "INSERT INTO consumer_positions"
            + " (consumer_group, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?)"
            + " ON CONFLICT DO NOTHING";
    static final String LOCK = "SELECT next_offset FROM consumer_positions"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ? FOR UPDATE";
    static final String ADVANCE = "UPDATE consumer_positions SET next_offset = ?"
            + " WHERE consumer_group = ? AND topic = ? AND kafka_partition = ?";
    /** A top-level string field of the generator's flat JSON (no JSON library on the path). */
    private static final String FIELD = "\"%s\"\\s*:\\s*\"([^\"\\\\]*)\"";
    private static final Pattern TYPE = Pattern.compile(String.format(FIELD, "type"));
    private static final Pattern EVENT_ID = Pattern.compile(String.format(FIELD, "event_id"));
    private static final Pattern KEY = Pattern.compile(String.format(FIELD, "key"));
    static final String GROUP = Contract.ENV.get("REPLAY_GROUP_ID");

    public static void main(String[] args) throws Exception {
        String mode = "insert-then-commit";
        int batch = 500;
        double workMs = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--mode" -> mode = args[++i];
                case "--batch" -> batch = Integer.parseInt(args[++i]);
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (!List.of("insert-then-commit", "offsets-in-db", "upsert").contains(mode)) {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        String url = Contract.ENV.get("REPLAY_JDBC_URL");
        if (url == null || url.isEmpty()) {
            System.err.println("Billing: REPLAY_JDBC_URL is not set: this run has no database");
            Contract.exit(2);
        }
        Contract.start("Billing");
        boolean positions = mode.equals("offsets-in-db");
        Map<String, String> own = Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(batch));
        try (Connection database = DriverManager.getConnection(url);
             KafkaConsumer<byte[], byte[]> consumer = Contract.consumer(own)) {
            database.setAutoCommit(!positions); // each charge on its own, but with positions
            consumer.subscribe(List.of(Contract.INPUT), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    if (positions) {
                        seekToStored(database, consumer, partitions);
                    }
                }
            });
            String statement = mode.equals("upsert") ? UPSERT : INSERT;
            while (!Contract.stopping()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                List<ConsumerRecord<byte[], byte[]>> charged = new ArrayList<>();
                records.forEach(charged::add);
                if (positions) {
                    charged = unclaimed(database, charged);
                }
                try (PreparedStatement insert = database.prepareStatement(statement)) {
                    for (ConsumerRecord<byte[], byte[]> record : charged) {
                        Contract.work(workMs);
                        charge(insert, record);
                    }
                }
                if (positions) {
                    advance(database, Contract.nextOffsets(charged));
                    database.commit();
                }
                try {
                    consumer.commitSync(Contract.nextOffsets(records));
                } catch (KafkaException e) {
                    System.err.println("Billing: commit refused, going on: " + e);
                }
            }
        }
    }

    /** Bind and insert one record's charge: the header's event id, else the value's. */
    static void charge(PreparedStatement insert, ConsumerRecord<byte[], byte[]> record)
            throws SQLException {
        String value = new String(record.value(), StandardCharsets.UTF_8);
        Header header = record.headers().lastHeader("event_id");
        String eventId = header != null ? new String(header.value(), StandardCharsets.UTF_8)
                : field(EVENT_ID, value);
        String type = field(TYPE, value);
        insert.setString(1, eventId);  // event_id and student are NOT NULL: a bad record fails
        String student = record.key() != null ? new String(record.key(), StandardCharsets.UTF_8)
                : field(KEY, value);
        insert.setString(2, student);
        insert.setLong(3, "account.created".equals(type) ? 1500 : 500);
        insert.executeUpdate();
    }

    private static String field(Pattern pattern, String json) {
        Matcher match = pattern.matcher(json);
        return match.find() ? match.group(1) : null;
    }

    /** Start each partition at its stored position (none: the group's offset, or earliest). */
    static void seekToStored(Connection database, KafkaConsumer<byte[], byte[]> consumer,
                             Collection<TopicPartition> partitions) {
        try (PreparedStatement query = database.prepareStatement(POSITIONS)) {
            Map<TopicPartition, Long> stored = new HashMap<>();
            for (String topic : partitions.stream().map(TopicPartition::topic).distinct().toList()) {
                query.setString(1, GROUP);
                query.setString(2, topic);
                try (ResultSet rows = query.executeQuery()) {
                    while (rows.next()) {
                        stored.put(new TopicPartition(topic, rows.getInt(1)), rows.getLong(2));
                    }
                }
            }
            database.commit();
            for (TopicPartition partition : partitions) {
                Long offset = stored.get(partition);
                if (offset != null) {
                    consumer.seek(partition, offset);
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("reading consumer_positions failed", e);
        }
    }

    /** Lock the batch's partitions' rows; drop records another instance already charged. */
    static List<ConsumerRecord<byte[], byte[]>> unclaimed(
            Connection database, List<ConsumerRecord<byte[], byte[]>> records) throws SQLException {
        Map<TopicPartition, Long> first = new TreeMap<>(  // one lock order: no deadlock
                Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        for (ConsumerRecord<byte[], byte[]> record : records) {
            first.putIfAbsent(new TopicPartition(record.topic(), record.partition()), record.offset());
        }
        Map<TopicPartition, Long> start = new HashMap<>();
        try (PreparedStatement claim = database.prepareStatement(CLAIM);
             PreparedStatement lock = database.prepareStatement(LOCK)) {
            for (Map.Entry<TopicPartition, Long> entry : first.entrySet()) {
                TopicPartition partition = entry.getKey();
                claim.setString(1, GROUP);
                claim.setString(2, partition.topic());
                claim.setInt(3, partition.partition());
                claim.setLong(4, entry.getValue());
                claim.executeUpdate();
                lock.setString(1, GROUP);
                lock.setString(2, partition.topic());
                lock.setInt(3, partition.partition());
                try (ResultSet row = lock.executeQuery()) {
                    start.put(partition, row.next() ? row.getLong(1) : entry.getValue());
                }
            }
        }
        List<ConsumerRecord<byte[], byte[]>> kept = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            if (record.offset() >= start.get(new TopicPartition(record.topic(), record.partition()))) {
                kept.add(record);
            }
        }
        return kept;
    }

    /** Move each partition's stored position past what this transaction charged. */
    static void advance(Connection database, Map<TopicPartition, OffsetAndMetadata> next)
            throws SQLException {
        try (PreparedStatement update = database.prepareStatement(ADVANCE)) {
            for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : next.entrySet()) {
                update.setLong(1, entry.getValue().offset());
                update.setString(2, GROUP);
                update.setString(3, entry.getKey().topic());
                update.setInt(4, entry.getKey().partition());
                update.executeUpdate();
            }
        }
    }

    private Billing() {
    }
}
