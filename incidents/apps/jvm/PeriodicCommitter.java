import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.StaleMemberEpochException;

/**
 * A service that keeps a map of processed offsets and flushes it on a timer.
 *
 * <pre>PeriodicCommitter [--commit-every-s S] [--work-ms MS] [--only-assigned]
 *     [--commit-on-revoke] [--retry-stale-commits] [--forget-revoked]</pre>
 *
 * Without {@code --only-assigned} (the post's code) the map keeps partitions the instance no
 * longer owns, so after a rebalance it commits their old offsets over the new owner's
 * progress. With it (the fix) commits are filtered to the current assignment, and progress on
 * partitions being revoked is committed before they leave.
 *
 * <p>{@code --commit-on-revoke} alone (KIP-848's migration advice) commits what was processed
 * of the partitions being revoked, output flushed first, before they leave.
 * {@code --retry-stale-commits} retries a commit refused with {@code STALE_MEMBER_EPOCH} (the
 * member's epoch moved on under the {@code consumer} protocol) instead of dropping it.
 * {@code --forget-revoked} drops what was processed of the revoked partitions without committing
 * it: the timer only ever commits partitions the member owns, and the next owner starts at the
 * last commit.
 */
public final class PeriodicCommitter {
    private final Map<TopicPartition, Long> done = new HashMap<>();
    private static final int STALE_RETRIES = 5;
    private final boolean onlyAssigned;
    private final boolean commitOnRevoke;
    private final boolean retryStale;
    private final boolean forgetRevoked;

    private PeriodicCommitter(
            boolean onlyAssigned, boolean commitOnRevoke, boolean retryStale, boolean forgetRevoked) {
        this.onlyAssigned = onlyAssigned;
        this.commitOnRevoke = commitOnRevoke;
        this.retryStale = retryStale;
        this.forgetRevoked = forgetRevoked;
    }

    private static boolean stale(Throwable e) {
        return e instanceof StaleMemberEpochException || e.getCause() instanceof StaleMemberEpochException;
    }

    /** Commit the processed offsets (of {@code partitions}, or of everything the map holds). */
    private void flush(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        Set<TopicPartition> assigned = consumer.assignment();
        for (Map.Entry<TopicPartition, Long> entry : done.entrySet()) {
            TopicPartition partition = entry.getKey();
            if (partitions != null && !partitions.contains(partition)) {
                continue;
            }
            if (onlyAssigned && !assigned.contains(partition)) {
                continue;
            }
            offsets.put(partition, new OffsetAndMetadata(entry.getValue()));
        }
        if (offsets.isEmpty()) {
            return;
        }
        for (int attempt = 1; ; attempt++) {
            try {
                consumer.commitSync(offsets);
                return;
            } catch (KafkaException e) {
                if (retryStale && stale(e) && attempt < STALE_RETRIES) {
                    System.err.println("PeriodicCommitter: stale member epoch, committing again: " + e);
                    continue;
                }
                System.err.println("PeriodicCommitter: commit refused, going on: " + e);
                return;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        double commitEveryS = 1.0;
        double workMs = 0;
        boolean onlyAssigned = false;
        boolean commitOnRevoke = false;
        boolean retryStale = false;
        boolean forgetRevoked = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--commit-every-s" -> commitEveryS = Double.parseDouble(args[++i]);
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                case "--only-assigned" -> onlyAssigned = true;
                case "--commit-on-revoke" -> commitOnRevoke = true;
                case "--retry-stale-commits" -> retryStale = true;
                case "--forget-revoked" -> forgetRevoked = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Contract.start("PeriodicCommitter");
        PeriodicCommitter committer =
                new PeriodicCommitter(onlyAssigned, commitOnRevoke, retryStale, forgetRevoked);
        Map<String, String> own = Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        try (KafkaConsumer<byte[], byte[]> consumer = Contract.consumer(own);
             KafkaProducer<byte[], byte[]> producer = Contract.producer(null)) {
            consumer.subscribe(List.of(Contract.INPUT), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    if (committer.onlyAssigned || committer.commitOnRevoke) {
                        producer.flush();
                        committer.flush(consumer, partitions);
                        partitions.forEach(committer.done::remove);
                    } else if (committer.forgetRevoked) {
                        partitions.forEach(committer.done::remove);
                    }
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                }
            });
            long period = (long) (commitEveryS * 1e9);
            long nextFlush = System.nanoTime() + period;
            while (!Contract.stopping()) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
                    Contract.work(workMs);
                    producer.send(Contract.result(Contract.OUTPUT, record));
                    committer.done.put(
                            new TopicPartition(record.topic(), record.partition()), record.offset() + 1);
                }
                if (System.nanoTime() >= nextFlush) {
                    producer.flush();
                    committer.flush(consumer, null);
                    nextFlush = System.nanoTime() + period;
                }
            }
            producer.flush();
            committer.flush(consumer, null);
        }
    }
}
