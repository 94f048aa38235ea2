import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * An exactly-once consume-transform-produce service, like a Kafka Streams app.
 *
 * <pre>EosProcessor [--side-effects TOPIC] [--keepalive-s S] [--outside-transaction] [--work-ms MS]
 *     [--transactional-id-per-start]</pre>
 *
 * Output and input offsets commit in one transaction. Any error ends the process (the post's
 * uncaught exception handler), and the supervisor restarts it like a deployment would.
 * {@code --side-effects TOPIC}: also send each result outside the transaction (an e-mail, a
 * call to another service). {@code --keepalive-s S}: when idle for S seconds, commit a
 * transaction holding only the current offsets, so the transactional id never looks abandoned
 * to the coordinator. {@code --outside-transaction}: write the output without a transaction,
 * then commit the offsets (the at-least-once variant). {@code --transactional-id-per-start}: a
 * new transactional id at every start (the contract's with the process id added), as
 * frameworks that derive it from a process do: a restart then cannot fence and abort the
 * transaction a killed process left open, which holds read_committed readers until it times out.
 */
public final class EosProcessor {
    public static void main(String[] args) throws Exception {
        String sideEffectsTopic = null;
        double keepaliveS = -1;
        boolean transactional = true;
        double workMs = 0;
        boolean idPerStart = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--side-effects" -> sideEffectsTopic = args[++i];
                case "--keepalive-s" -> keepaliveS = Double.parseDouble(args[++i]);
                case "--outside-transaction" -> transactional = false;
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                case "--transactional-id-per-start" -> idPerStart = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Contract.start("EosProcessor");
        Map<String, String> own = Map.of(
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        String transactionalId = transactional ? Contract.ENV.get("REPLAY_TRANSACTIONAL_ID") : null;
        if (transactionalId != null && idPerStart) {
            transactionalId += "-" + ProcessHandle.current().pid();
        }
        try (KafkaConsumer<byte[], byte[]> consumer = Contract.consumer(own);
             KafkaProducer<byte[], byte[]> producer = Contract.producer(transactionalId);
             KafkaProducer<byte[], byte[]> sideEffects =
                     sideEffectsTopic == null ? null : Contract.producer(null)) {
            if (transactional) {
                producer.initTransactions();
            }
            consumer.subscribe(List.of(Contract.INPUT));
            long lastTransaction = System.nanoTime();
            while (!Contract.stopping()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                try {
                    if (records.isEmpty()) {
                        double idle = (System.nanoTime() - lastTransaction) / 1e9;
                        if (transactional && keepaliveS > 0 && idle >= keepaliveS) {
                            keepAlive(consumer, producer);
                            lastTransaction = System.nanoTime();
                        }
                        continue;
                    }
                    if (transactional) {
                        producer.beginTransaction();
                    }
                    for (ConsumerRecord<byte[], byte[]> record : records) {
                        Contract.work(workMs);
                        producer.send(Contract.result(Contract.OUTPUT, record));
                        if (sideEffects != null) {
                            sideEffects.send(Contract.result(sideEffectsTopic, record));
                        }
                    }
                    if (sideEffects != null) {
                        sideEffects.flush();
                    }
                    if (transactional) {
                        producer.sendOffsetsToTransaction(
                                Contract.nextOffsets(records), consumer.groupMetadata());
                        producer.commitTransaction();
                    } else {
                        producer.flush();
                        consumer.commitSync(Contract.nextOffsets(records));
                    }
                } catch (KafkaException e) {
                    System.err.println("EosProcessor: giving up on " + e);
                    Contract.exit(1);
                }
                lastTransaction = System.nanoTime();
            }
        }
    }

    /** Commit the current positions in a transaction of their own. */
    private static void keepAlive(KafkaConsumer<byte[], byte[]> consumer,
                                  KafkaProducer<byte[], byte[]> producer) {
        Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
        for (TopicPartition partition : consumer.assignment()) {
            positions.put(partition, new OffsetAndMetadata(consumer.position(partition)));
        }
        if (positions.isEmpty()) {
            return;
        }
        producer.beginTransaction();
        producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
        producer.commitTransaction();
    }

    private EosProcessor() {
    }
}
