import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;

/**
 * An at-least-once service: poll a batch, do the work for each record, write, commit.
 *
 * <pre>BatchForwarder [--batch N] [--work-ms MS] [--on-bad crash|skip|dead-letter]
 *                [--dead-letter-topic TOPIC] [--enrich-percent P] [--on-send-error log|stop]
 *                [--on-commit-error exit|retry]</pre>
 *
 * The batch is {@code max.poll.records}: the incident's, else {@code --batch} (500, the
 * client's default). A commit that fails is logged and the loop goes on, as the post's
 * service did.
 *
 * <p>{@code --on-bad} makes it deserialize each value first, as the Python app does: a value
 * that is not UTF-8 text of a JSON object (a poison pill: its producer changed its serializer)
 * either ends the process uncommitted ({@code crash}: restarted, it resumes at the same offset
 * and meets it again), is logged and dropped with its offset committed ({@code skip}: lost
 * silently), or is written as it came to {@code --dead-letter-topic} before the batch is
 * committed ({@code dead-letter}). Without it, values are forwarded unread, as before.
 *
 * <p>{@code --enrich-percent P} writes each input's value (a JSON object) with an
 * {@code enrichment} field of P percent of its size added, key and headers kept, as the Python
 * app does. {@code --on-send-error} reads each send's result: {@code log} logs a failed one and
 * commits the batch anyway (the input is lost); {@code stop} logs it and ends the process
 * without committing the batch, its clients closed, so that the restarted service resumes at
 * its last commit and sends the batch again. Without it, send results are not read.
 *
 * <p>{@code --on-commit-error} says what a commit that failed does instead of being logged:
 * {@code exit} ends the process, the batch uncommitted (restarted, it resumes at its last
 * commit and does the batch again); {@code retry} commits the same offsets again, a second
 * later, while the failure is a retriable one (the coordinator moved or was not found within
 * {@code default.api.timeout.ms}), until it is taken or the service is asked to stop.
 */
public final class BatchForwarder {
    public static void main(String[] args) throws Exception {
        int batch = 500;
        double workMs = 0;
        String onBad = null;
        String deadLetters = null;
        Double enrichPercent = null;
        String onSendError = null;
        String onCommitError = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--batch" -> batch = Integer.parseInt(args[++i]);
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                case "--on-bad" -> onBad = args[++i];
                case "--dead-letter-topic" -> deadLetters = args[++i];
                case "--enrich-percent" -> enrichPercent = Double.parseDouble(args[++i]);
                case "--on-send-error" -> onSendError = args[++i];
                case "--on-commit-error" -> onCommitError = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (onBad != null && !List.of("crash", "skip", "dead-letter").contains(onBad)) {
            throw new IllegalArgumentException("--on-bad: crash, skip or dead-letter, not " + onBad);
        }
        if ("dead-letter".equals(onBad) && deadLetters == null) {
            throw new IllegalArgumentException("--on-bad dead-letter needs --dead-letter-topic");
        }
        if (onSendError != null && !List.of("log", "stop").contains(onSendError)) {
            throw new IllegalArgumentException("--on-send-error: log or stop, not " + onSendError);
        }
        if (onCommitError != null && !List.of("exit", "retry").contains(onCommitError)) {
            throw new IllegalArgumentException("--on-commit-error: exit or retry, not " + onCommitError);
        }
        Contract.start("BatchForwarder");
        List<String> failed = Collections.synchronizedList(new ArrayList<>());
        Map<String, String> own = Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(batch));
        try (KafkaConsumer<byte[], byte[]> consumer = Contract.consumer(own);
             KafkaProducer<byte[], byte[]> producer = Contract.producer(null)) {
            consumer.subscribe(List.of(Contract.INPUT));
            while (!Contract.stopping()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    Contract.work(workMs);
                    if (onBad != null && !decodes(record.value())) {
                        String where = record.topic() + " partition " + record.partition()
                                + " offset " + record.offset();
                        switch (onBad) {
                            case "crash" -> throw new IllegalStateException(
                                    "cannot deserialize the record at " + where);
                            case "skip" -> System.out.println(
                                    "skipping a record that cannot be deserialized at " + where);
                            default -> producer.send(new ProducerRecord<>(
                                    deadLetters, null, record.key(), record.value(), record.headers()));
                        }
                        continue;
                    }
                    ProducerRecord<byte[], byte[]> out = Contract.result(Contract.OUTPUT, record);
                    if (enrichPercent != null) {
                        out = new ProducerRecord<>(Contract.OUTPUT, null, record.key(),
                                enriched(record.value(), enrichPercent), record.headers());
                    }
                    if (onSendError == null) {
                        producer.send(out);
                        continue;
                    }
                    String where = record.topic() + " partition " + record.partition()
                            + " offset " + record.offset();
                    int size = out.value().length;
                    producer.send(out, (metadata, error) -> {
                        if (error != null) {
                            String failure = size + " bytes for " + where + ": " + error;
                            failed.add(failure);
                            System.out.println("send failed, " + failure);
                        }
                    });
                }
                producer.flush();
                if (!failed.isEmpty() && "stop".equals(onSendError)) {
                    // thrown out of the try, so that the clients are closed (the consumer leaves
                    // its group, and the restarted service is not kept waiting for its session
                    // to time out), as the Python app's are
                    throw new IllegalStateException(failed.size()
                            + " sends failed; stopping without committing the batch");
                }
                failed.clear();
                commit(consumer, Contract.nextOffsets(records), onCommitError);
            }
        }
    }

    /** Commit {@code offsets}; a failure is logged, then handled as {@code onError} says. */
    static void commit(KafkaConsumer<byte[], byte[]> consumer,
                       Map<TopicPartition, OffsetAndMetadata> offsets, String onError)
            throws InterruptedException {
        while (true) {
            try {
                consumer.commitSync(offsets);
                return;
            } catch (KafkaException e) {
                if ("exit".equals(onError)) {
                    System.err.println("BatchForwarder: commit failed, exiting uncommitted: " + e);
                    Contract.exit(1);
                }
                if (!"retry".equals(onError) || !(e instanceof RetriableException)
                        || Contract.stopping()) {
                    System.err.println("BatchForwarder: commit refused, going on: " + e);
                    return;
                }
                System.err.println("BatchForwarder: commit failed, trying again: " + e);
                Thread.sleep(1000);
            }
        }
    }

    /**
     * {@code value}, a JSON object, with an {@code enrichment} field of {@code percent} of its
     * size added.
     */
    static byte[] enriched(byte[] value, double percent) {
        String text = new String(value, StandardCharsets.UTF_8).strip();
        String padding = "e".repeat((int) (value.length * percent / 100));
        return (text.substring(0, text.length() - 1) + ",\"enrichment\":\"" + padding + "\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Whether {@code value} is what the service's deserializer takes: UTF-8 text of a JSON
     * object. (Only its outline is checked: no JSON library is on the classpath.)
     */
    static boolean decodes(byte[] value) {
        if (value == null) {
            return false;
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(value))
                    .toString()
                    .strip();
        } catch (CharacterCodingException e) {
            return false;
        }
        return text.startsWith("{") && text.endsWith("}");
    }

    private BatchForwarder() {
    }
}
