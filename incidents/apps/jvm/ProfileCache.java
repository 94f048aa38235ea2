import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.header.Header;

/**
 * A profile service's cache: a table of user profiles in PostgreSQL, kept from a compacted topic.
 *
 * <pre>ProfileCache [--batch N]</pre>
 *
 * The database is the contract's {@code REPLAY_JDBC_URL} (its {@code profiles} table made by the
 * incident), through {@code org.postgresql.Driver} on the classpath. The batch is
 * {@code max.poll.records}: the incident's ({@code REPLAY_MAX_POLL_RECORDS}), else
 * {@code --batch} (100). Each poll's batch is applied in one database transaction: a record with
 * a value upserts its key's row (the event id, and the email and plan of its {@code profile});
 * a record without one, a tombstone, deletes it. The offsets are committed after the database
 * commit; a commit that fails is logged and the loop goes on (the batch is applied again after
 * a rebalance or a restart, which an upsert and a delete survive). A database error ends the
 * process; the supervisor restarts it as a deployment would.
 *
 * <p>Why it is here: a new instance, or one whose group offsets are gone, rebuilds the table by
 * reading the topic from the start, and compaction keeps that read short. But the cache applies
 * each delete as it reads its tombstone, and the log cleaner drops a tombstone once it is older
 * than {@code delete.retention.ms}: a tombstone removed while the service was stopped (or behind)
 * is a delete it never applies, and that profile stays in its table for good.
 */
public final class ProfileCache {
    static final String UPSERT = "INSERT INTO profiles (profile_id, event_id, email, plan)"
            + " VALUES (?, ?, ?, ?) ON CONFLICT (profile_id) DO UPDATE SET"
            + " event_id = EXCLUDED.event_id, email = EXCLUDED.email, plan = EXCLUDED.plan,"
            + " updated_at = clock_timestamp()";
    static final String DELETE = "DELETE FROM profiles WHERE profile_id = ?";
    /** A string field of the generator's flat JSON (no JSON library on the path). */
    private static final String FIELD = "\"%s\"\\s*:\\s*\"([^\"\\\\]*)\"";
    private static final Pattern EVENT_ID = Pattern.compile(String.format(FIELD, "event_id"));
    private static final Pattern KEY = Pattern.compile(String.format(FIELD, "key"));
    /** Fields of the nested {@code profile} object: the top level has none of these names. */
    private static final Pattern EMAIL = Pattern.compile(String.format(FIELD, "email"));
    private static final Pattern PLAN = Pattern.compile(String.format(FIELD, "plan"));

    public static void main(String[] args) throws Exception {
        int batch = 100;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--batch" -> batch = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        String pollRecords = Contract.ENV.get("REPLAY_MAX_POLL_RECORDS");
        if (pollRecords != null && !pollRecords.isEmpty()) {
            batch = Integer.parseInt(pollRecords);  // the incident's, also in its properties
        }
        String url = Contract.ENV.get("REPLAY_JDBC_URL");
        if (url == null || url.isEmpty()) {
            System.err.println("ProfileCache: REPLAY_JDBC_URL is not set: this run has no database");
            Contract.exit(2);
        }
        Contract.start("ProfileCache");
        Map<String, String> own = Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(batch));
        try (Connection database = DriverManager.getConnection(url);
             KafkaConsumer<byte[], byte[]> consumer = Contract.consumer(own)) {
            database.setAutoCommit(false);  // a batch is one transaction
            consumer.subscribe(List.of(Contract.INPUT));
            while (!Contract.stopping()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                try (PreparedStatement upsert = database.prepareStatement(UPSERT);
                     PreparedStatement delete = database.prepareStatement(DELETE)) {
                    for (ConsumerRecord<byte[], byte[]> record : records) {  // in offset order
                        apply(upsert, delete, record);
                    }
                }
                database.commit();
                try {
                    consumer.commitSync(Contract.nextOffsets(records));
                } catch (KafkaException e) {
                    System.err.println("ProfileCache: commit refused, going on: " + e);
                }
            }
        }
    }

    /** Upsert the record's profile, or delete it when the record is a tombstone (no value). */
    static void apply(PreparedStatement upsert, PreparedStatement delete,
                      ConsumerRecord<byte[], byte[]> record) throws SQLException {
        String key = record.key() != null ? new String(record.key(), StandardCharsets.UTF_8) : null;
        if (record.value() == null) {
            delete.setString(1, key);
            delete.executeUpdate();
            return;
        }
        String value = new String(record.value(), StandardCharsets.UTF_8);
        Header header = record.headers().lastHeader("event_id");
        String eventId = header != null && header.value() != null
                ? new String(header.value(), StandardCharsets.UTF_8)
                : field(EVENT_ID, value);
        upsert.setString(1, key != null ? key : field(KEY, value));  // NOT NULL: a bad record fails
        upsert.setString(2, eventId);
        upsert.setString(3, field(EMAIL, value));
        upsert.setString(4, field(PLAN, value));
        upsert.executeUpdate();
    }

    private static String field(Pattern pattern, String json) {
        Matcher match = pattern.matcher(json);
        return match.find() ? match.group(1) : null;
    }

    private ProfileCache() {
    }
}
