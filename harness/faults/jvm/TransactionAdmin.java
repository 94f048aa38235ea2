import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersOptions;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.DescribeTransactionsOptions;
import org.apache.kafka.clients.admin.DescribeTransactionsResult;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * What the brokers know about a topic's transactions, which librdkafka cannot ask.
 *
 * <pre>
 * describe BOOTSTRAP TOPIC            producers of every partition, open transactions on TOPIC
 * abort BOOTSTRAP TOPIC PARTITION [IDLE_MS]
 *                                     abort the open transactions on the partition (KIP-664)
 *                                     whose producer wrote nothing for IDLE_MS (default 0)
 * </pre>
 *
 * Prints one JSON line on stdout; on failure a message on stderr and exit code 2. All admin
 * calls together take at most {@code -Dtransaction.admin.timeout.ms} (20 s by default).
 * Absent numbers (coordinator epoch, transaction start offset or time) are printed as -1, as
 * the protocol and kafka-transactions.sh do.
 */
public final class TransactionAdmin {
    private static final int TIMEOUT_MS =
        Integer.getInteger("transaction.admin.timeout.ms", 20_000);
    private static final long DEADLINE_NS = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
    /** The states of a transactional id while it holds partitions. */
    private static final List<TransactionState> OPEN = List.of(
        TransactionState.ONGOING, TransactionState.PREPARE_COMMIT,
        TransactionState.PREPARE_ABORT, TransactionState.PREPARE_EPOCH_FENCE);

    public static void main(String[] args) {
        boolean describe = args.length == 3 && args[0].equals("describe");
        boolean abort = (args.length == 4 || args.length == 5) && args[0].equals("abort");
        if (!describe && !abort) {
            System.err.println("usage: TransactionAdmin describe BOOTSTRAP TOPIC"
                + " | abort BOOTSTRAP TOPIC PARTITION [IDLE_MS]");
            System.exit(2);
        }
        Admin admin = null;
        int status = 0;
        try {
            admin = AdminText.connect(args[1], TIMEOUT_MS);
            System.out.println(describe
                ? describe(admin, args[2])
                : abort(admin, new TopicPartition(args[2], Integer.parseInt(args[3])),
                    args.length == 5 ? Long.parseLong(args[4]) : 0L));
        } catch (Exception e) {
            System.err.println("TransactionAdmin: " + args[0] + " failed: " + AdminText.explain(e));
            status = 2;
        } finally {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
        }
        System.exit(status);
    }

    static String describe(Admin admin, String topic) throws Exception {
        List<TopicPartition> partitions = partitions(admin, topic);
        Map<TopicPartition, PartitionProducerState> producers = await(admin
            .describeProducers(partitions, new DescribeProducersOptions().timeoutMs(remainingMs()))
            .all());
        List<String> partitionsJson = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            String states = producers.get(tp).activeProducers().stream()
                .map(TransactionAdmin::producerJson)
                .collect(Collectors.joining(","));
            partitionsJson.add(
                "{\"partition\":" + tp.partition() + ",\"producers\":[" + states + "]}");
        }
        List<String> transactionsJson = new ArrayList<>();
        for (Map.Entry<String, TransactionDescription> open : openTransactions(admin).entrySet()) {
            TransactionDescription txn = open.getValue();
            if (txn.topicPartitions().stream().anyMatch(tp -> tp.topic().equals(topic))) {
                transactionsJson.add(transactionJson(open.getKey(), txn));
            }
        }
        return "{\"topic\":" + AdminText.quote(topic)
            + ",\"partitions\":[" + String.join(",", partitionsJson) + "]"
            + ",\"transactions\":[" + String.join(",", transactionsJson) + "]}";
    }

    /**
     * Has the partition leader write abort markers, as kafka-transactions.sh abort does, for
     * the open transactions whose producer wrote nothing for {@code idleMs}: a live producer's
     * transaction is left alone.
     */
    static String abort(Admin admin, TopicPartition tp, long idleMs) throws Exception {
        if (!partitions(admin, tp.topic()).contains(tp)) {  // describeProducers would retry it
            throw new UnknownTopicOrPartitionException(tp + " does not exist");
        }
        PartitionProducerState state = await(admin
            .describeProducers(List.of(tp), new DescribeProducersOptions().timeoutMs(remainingMs()))
            .partitionResult(tp));
        List<String> aborted = new ArrayList<>();
        for (ProducerState producer : state.activeProducers()) {
            boolean idle = producer.lastTimestamp() <= System.currentTimeMillis() - idleMs;
            if (producer.currentTransactionStartOffset().orElse(-1) < 0 || !idle) {
                continue;
            }
            // A producer id that never ended a transaction has no coordinator epoch yet (-1);
            // 0 is at most any real one, as kafka-transactions.sh assumes.
            int coordinatorEpoch = Math.max(0, producer.coordinatorEpoch().orElse(0));
            AbortTransactionSpec spec = new AbortTransactionSpec(
                tp, producer.producerId(), (short) producer.producerEpoch(), coordinatorEpoch);
            await(admin.abortTransaction(spec).all());
            aborted.add(producerJson(producer));
        }
        return "{\"topic\":" + AdminText.quote(tp.topic()) + ",\"partition\":" + tp.partition()
            + ",\"aborted\":[" + String.join(",", aborted) + "]}";
    }

    /** The topic's partitions; fails fast on a topic that does not exist. */
    static List<TopicPartition> partitions(Admin admin, String topic) throws Exception {
        return await(admin
            .describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs(remainingMs()))
            .allTopicNames()).get(topic).partitions().stream()
            .map(p -> new TopicPartition(topic, p.partition()))
            .collect(Collectors.toList());
    }

    /** Open transactions by transactional id, skipping ids that expire while we ask. */
    static Map<String, TransactionDescription> openTransactions(Admin admin) throws Exception {
        Collection<TransactionListing> listings = await(admin.listTransactions(
            new ListTransactionsOptions().filterStates(OPEN).timeoutMs(remainingMs())).all());
        List<String> ids = listings.stream()
            .map(TransactionListing::transactionalId)
            .collect(Collectors.toList());
        Map<String, TransactionDescription> open = new TreeMap<>();
        if (ids.isEmpty()) {
            return open;
        }
        DescribeTransactionsResult result = admin.describeTransactions(
            ids, new DescribeTransactionsOptions().timeoutMs(remainingMs()));
        for (String id : ids) {
            try {
                open.put(id, await(result.description(id)));
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TransactionalIdNotFoundException)) {
                    throw e;
                }
            }
        }
        return open;
    }

    static String producerJson(ProducerState p) {
        return "{\"producerId\":" + p.producerId()
            + ",\"producerEpoch\":" + p.producerEpoch()
            + ",\"lastSequence\":" + p.lastSequence()
            + ",\"lastTimestamp\":" + p.lastTimestamp()
            + ",\"coordinatorEpoch\":" + p.coordinatorEpoch().orElse(-1)
            + ",\"currentTransactionStartOffset\":" + p.currentTransactionStartOffset().orElse(-1)
            + "}";
    }

    static String transactionJson(String transactionalId, TransactionDescription t) {
        String partitions = t.topicPartitions().stream()
            .sorted(Comparator.comparing(TopicPartition::toString))
            .map(tp -> "{\"topic\":" + AdminText.quote(tp.topic()) + ",\"partition\":" + tp.partition() + "}")
            .collect(Collectors.joining(","));
        return "{\"transactionalId\":" + AdminText.quote(transactionalId)
            + ",\"producerId\":" + t.producerId()
            + ",\"producerEpoch\":" + t.producerEpoch()
            + ",\"state\":" + AdminText.quote(t.state().toString())
            + ",\"transactionTimeoutMs\":" + t.transactionTimeoutMs()
            + ",\"transactionStartTimeMs\":" + t.transactionStartTimeMs().orElse(-1)
            + ",\"partitions\":[" + partitions + "]}";
    }

    /** What is left of the tool's time budget, for the next admin call. */
    static int remainingMs() {
        return (int) Math.max(1, (DEADLINE_NS - System.nanoTime()) / 1_000_000L);
    }

    static <T> T await(KafkaFuture<T> future) throws Exception {
        try {
            return future.get(remainingMs() + 1_000L, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TimeoutException("no answer from the brokers in " + TIMEOUT_MS + " ms");
        }
    }
}
