import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

/**
 * What the brokers know about a share group (KIP-932), which librdkafka cannot ask, and the
 * group-level settings a run gives it before its apps start.
 *
 * <pre>
 * configure BOOTSTRAP GROUP KEY=VALUE...     set group configs (incrementalAlterConfigs, GROUP)
 * describe BOOTSTRAP GROUP TOPIC             one JSON line: members, per-partition start offset
 * watch BOOTSTRAP GROUP TOPIC INTERVAL_MS    a describe line every INTERVAL_MS until stdin ends
 * </pre>
 *
 * A describe line: {"group","state","members":[{"memberId","clientId","partitions":[..]}],
 * "partitions":[{"partition","startOffset","lag","end"}]}; startOffset (the share-partition
 * start offset, SPSO: every record before it is acknowledged or archived) and lag are -1 where
 * the group has no state for the partition yet. On failure a message on stderr and exit code 2
 * (watch prints {"error": ...} lines instead and goes on).
 */
public final class ShareAdmin {
    private static final int TIMEOUT_MS = Integer.getInteger("share.admin.timeout.ms", 20_000);

    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: ShareAdmin configure BOOTSTRAP GROUP KEY=VALUE..."
                + " | describe BOOTSTRAP GROUP TOPIC | watch BOOTSTRAP GROUP TOPIC INTERVAL_MS");
            System.exit(2);
        }
        int status = 0;
        try (Admin admin = AdminText.connect(args[1], TIMEOUT_MS)) {
            switch (args[0]) {
                case "configure" -> System.out.println(configure(admin, args[2],
                    List.of(args).subList(3, args.length)));
                case "describe" -> System.out.println(describe(admin, args[2], args[3]));
                case "watch" -> watch(admin, args[2], args[3], Long.parseLong(args[4]));
                default -> throw new IllegalArgumentException("unknown command " + args[0]);
            }
        } catch (Exception e) {
            System.err.println("ShareAdmin: " + args[0] + " failed: " + AdminText.explain(e));
            status = 2;
        }
        System.out.flush();
        System.exit(status);
    }

    static String configure(Admin admin, String group, List<String> settings) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = new ArrayList<>();
        List<String> done = new ArrayList<>();
        for (String setting : settings) {
            int eq = setting.indexOf('=');
            String key = setting.substring(0, eq);
            String value = setting.substring(eq + 1);
            ops.add(new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET));
            done.add(AdminText.quote(key) + ":" + AdminText.quote(value));
        }
        await(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
        return "{\"group\":" + AdminText.quote(group) + ",\"set\":{" + String.join(",", done) + "}}";
    }

    static String describe(Admin admin, String group, String topic) throws Exception {
        List<TopicPartition> partitions = admin.describeTopics(List.of(topic)).allTopicNames()
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic).partitions().stream()
            .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toList());
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        partitions.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
        Map<TopicPartition, Long> ends = new TreeMap<>(
            (a, b) -> Integer.compare(a.partition(), b.partition()));
        await(admin.listOffsets(latest).all()).forEach((tp, info) -> ends.put(tp, info.offset()));
        String state = "\"Dead\"";
        List<String> members = new ArrayList<>();
        try {
            ShareGroupDescription description =
                await(admin.describeShareGroups(List.of(group)).describedGroups().get(group));
            state = AdminText.quote(description.groupState().toString());
            for (ShareMemberDescription m : description.members()) {
                String owned = m.assignment().topicPartitions().stream()
                    .filter(tp -> tp.topic().equals(topic)).map(tp -> "" + tp.partition())
                    .sorted().collect(Collectors.joining(","));
                members.add("{\"memberId\":" + AdminText.quote(m.consumerId()) + ",\"clientId\":"
                    + AdminText.quote(m.clientId()) + ",\"partitions\":[" + owned + "]}");
            }
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                throw e;
            }
        }
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = new HashMap<>();
        Map<TopicPartition, SharePartitionOffsetInfo> found = await(admin.listShareGroupOffsets(
            Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(partitions)))
            .partitionsToOffsetInfo(group));
        if (found != null) {
            found.forEach((tp, info) -> { if (info != null) { offsets.put(tp, info); } });
        }
        List<String> rows = new ArrayList<>();
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            SharePartitionOffsetInfo info = offsets.get(end.getKey());
            rows.add("{\"partition\":" + end.getKey().partition()
                + ",\"startOffset\":" + (info == null ? -1 : info.startOffset())
                + ",\"lag\":" + (info == null ? -1 : info.lag().orElse(-1L))
                + ",\"end\":" + end.getValue() + "}");
        }
        return "{\"group\":" + AdminText.quote(group) + ",\"topic\":" + AdminText.quote(topic)
            + ",\"state\":" + state + ",\"ms\":" + System.currentTimeMillis()
            + ",\"members\":[" + String.join(",", members) + "]"
            + ",\"partitions\":[" + String.join(",", rows) + "]}";
    }

    /** A describe line every intervalMs until stdin ends (the harness closes it to stop). */
    static void watch(Admin admin, String group, String topic, long intervalMs) throws Exception {
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                while (in.readLine() != null) {
                    // nothing to read: its end is the signal to stop
                }
            } catch (Exception e) {
                // the end all the same
            }
            System.out.flush();
            Runtime.getRuntime().halt(0);
        });
        stdin.setDaemon(true);
        stdin.start();
        while (true) {
            long started = System.nanoTime();
            try {
                System.out.println(describe(admin, group, topic));
            } catch (Exception e) {
                System.out.println("{\"error\":" + AdminText.quote(AdminText.explain(e)) + ",\"ms\":"
                    + System.currentTimeMillis() + "}");
            }
            System.out.flush();
            long spent = (System.nanoTime() - started) / 1_000_000L;
            Thread.sleep(Math.max(0, intervalMs - spent));
        }
    }

    static <T> T await(KafkaFuture<T> future) throws Exception {
        try {
            return future.get(TIMEOUT_MS + 1_000L, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new org.apache.kafka.common.errors.TimeoutException(
                "no answer from the brokers in " + TIMEOUT_MS + " ms");
        }
    }
}
