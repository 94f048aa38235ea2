import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;

/**
 * An at-least-once service: poll a batch, do the work for each record, write, commit.
 *
 * <pre>BatchForwarder [--batch N] [--work-ms MS] [--on-bad crash|skip|dead-letter]
 *                [--dead-letter-topic TOPIC]</pre>
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
 */
public final class BatchForwarder {
    public static void main(String[] args) throws Exception {
        int batch = 500;
        double workMs = 0;
        String onBad = null;
        String deadLetters = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--batch" -> batch = Integer.parseInt(args[++i]);
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                case "--on-bad" -> onBad = args[++i];
                case "--dead-letter-topic" -> deadLetters = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (onBad != null && !List.of("crash", "skip", "dead-letter").contains(onBad)) {
            throw new IllegalArgumentException("--on-bad: crash, skip or dead-letter, not " + onBad);
        }
        if ("dead-letter".equals(onBad) && deadLetters == null) {
            throw new IllegalArgumentException("--on-bad dead-letter needs --dead-letter-topic");
        }
        Contract.start("BatchForwarder");
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
                    producer.send(Contract.result(Contract.OUTPUT, record));
                }
                producer.flush();
                try {
                    consumer.commitSync(Contract.nextOffsets(records));
                } catch (KafkaException e) {
                    System.err.println("BatchForwarder: commit refused, going on: " + e);
                }
            }
        }
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
