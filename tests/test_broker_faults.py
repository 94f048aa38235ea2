"""Broker faults on a real 3-node KRaft cluster: kill -9, restart, pause, the quorum leader.

One embedded cluster serves the module (RF 3, ``min.insync.replicas = 2``); every test leaves it
with all three nodes running, which the fixture checks after each test. The controller is
cross-checked with Kafka's own DescribeQuorum (the Java Admin client on the broker's classpath),
a source independent of the logs the harness reads. The last test replays a small incident
with ``brokers = 3`` through the engine.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from pyspark.sql import SparkSession

from kafka_replay.cluster import Cluster
from kafka_replay.cluster.artifacts import kafka_classpath
from kafka_replay.cluster.embedded import java_command
from kafka_replay.cluster.pool import ClusterPool, ClusterSpec
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.faults.brokers import (
    BrokerFaultError,
    BrokerFaults,
    active_controller,
    controller_from_logs,
    find_node,
    group_coordinator,
    group_offsets_holders,
    next_leader,
    partition_leaders,
)
from kafka_replay.history import coordinator_partition, read_stream
from kafka_replay.servers.process import thread_states
from tests.fault_incidents import replay_on_pool, write_incident
from tests.kafka_helpers import eventually, new_consumer, produce_acked

BROKER_CONFIG = {"min.insync.replicas": 2}
TIMEOUT_S = 120.0

#: Kafka's own answer to "who leads the quorum" (KIP-836, Admin.describeMetadataQuorum).
DESCRIBE_QUORUM = """
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;

public class DescribeQuorum {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(props)) {
            int leader = admin.describeMetadataQuorum().quorumInfo().get().leaderId();
            System.out.println("quorum-leader=" + leader);
        }
    }
}
"""


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPool]:
    pool = ClusterPool(tmp_path_factory.mktemp("brokers"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="module")
def spec() -> ClusterSpec:
    return ClusterSpec.of(brokers=3, broker_config=BROKER_CONFIG)


@pytest.fixture
def cluster(pool: ClusterPool, spec: ClusterSpec) -> Iterator[Cluster]:
    """The module's cluster; after each test every node must run again (the pool reuses it)."""
    cluster = pool.get(spec)
    yield cluster
    assert not cluster.needs_restore(), "a test left a broker down or paused"  # type: ignore[attr-defined]


@pytest.fixture
def topic(cluster: Cluster) -> Iterator[str]:
    name = cluster.create_topic("faults", 3, 3)
    yield name
    cluster.delete_topics([name])


def leader_of(cluster: Cluster, topic: str, partition: int = 0) -> int:
    return partition_leaders(cluster, {"t": topic})[f"t/{partition}"]  # type: ignore[arg-type]


def answers(cluster: Cluster, node_id: int, timeout: float) -> bool:
    """Whether the node itself answers a metadata request within ``timeout``."""
    try:
        cluster.node_admin(node_id).list_topics(timeout=timeout)  # type: ignore[attr-defined]
    except KafkaException:
        return False
    return True


def test_killing_the_leader_moves_leadership_and_acks_all_still_succeeds(
    cluster: Cluster, topic: str
) -> None:
    faults = BrokerFaults(cluster, {"input": topic}, random.Random(1))
    before = leader_of(cluster, topic)
    led = [p for p in range(3) if leader_of(cluster, topic, p) == before]
    heirs = {f"input/{p}": next_leader(cluster, topic, p, before) for p in led}  # type: ignore[arg-type]
    found = faults.kill("leader", "input", 0, timeout=TIMEOUT_S)
    try:
        assert found["node"] == before
        assert found["leaders_before"]["input/0"] == before
        after = found["leaders_after"]["input/0"]
        assert after not in (before, -1), found
        # Kafka elects the follower next_leader names, for each partition the node led.
        assert {where: found["leaders_after"][where] for where in heirs} == heirs
        assert found["leadership_moved_s"] is not None
        assert leader_of(cluster, topic) == after  # metadata shows it, not just the record
        assert not cluster.node(before).alive()  # type: ignore[attr-defined]
        cluster.check_alive()  # a deliberate kill is no crash
        acked = produce_acked(cluster, topic, [(f"k{i}", "v") for i in range(50)], acks="all")
        assert len(acked) == 50  # two of three replicas in sync satisfy min.insync.replicas
    finally:
        restarted = faults.restart(timeout=TIMEOUT_S)
    assert restarted["node"] == before
    assert len(cluster.admin().list_topics(timeout=30).brokers) == 3
    assert cluster.brokers_seen_by(before) == {1, 2, 3}  # type: ignore[attr-defined]


def test_a_created_topic_is_led_in_every_brokers_metadata(cluster: Cluster) -> None:
    """Each node, asked alone right after creation, already knows every partition's leader."""
    name = cluster.create_topic("everywhere", 6, 3)
    try:
        for node_id in cluster.running_ids():  # type: ignore[attr-defined]
            answer = cluster.node_admin(node_id).list_topics(name, timeout=10)  # type: ignore[attr-defined]
            partitions = answer.topics[name].partitions
            assert sorted(partitions) == list(range(6)), (node_id, partitions)
            assert all(p.leader in (1, 2, 3) for p in partitions.values()), (node_id, partitions)
    finally:
        cluster.delete_topics([name])


def test_a_paused_broker_does_not_answer_until_it_is_resumed(cluster: Cluster) -> None:
    node = cluster.nodes[1]  # type: ignore[attr-defined]
    cluster.pause_node(node.node_id)  # type: ignore[attr-defined]
    try:
        assert node.alive() and node.paused
        assert set(thread_states(node.process.pid)) == {"T"}  # every JVM thread, at once
        assert not answers(cluster, node.node_id, timeout=3.0), "a SIGSTOPped broker answered"
        assert node.node_id not in cluster.running_ids()  # type: ignore[attr-defined]
    finally:
        cluster.resume_node(node.node_id)  # type: ignore[attr-defined]
    eventually(
        lambda: answers(cluster, node.node_id, timeout=3.0),
        TIMEOUT_S,
        "the resumed broker answering",
        every_s=0.2,
    )
    cluster.wait_serving(node.node_id, TIMEOUT_S)  # type: ignore[attr-defined]


def test_the_leaders_log_end_counts_what_its_frozen_followers_have_not_copied(
    cluster: Cluster, topic: str
) -> None:
    """acks=1 writes while both followers are frozen: the high watermark stays, the leader's
    log end (asked of it as a debugging replica) counts each of them; once the followers are
    back, the two agree."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    from kafka_replay.cluster.log_end import log_end_offsets

    leader = leader_of(cluster, topic)
    port = cluster.node(leader).address.port  # type: ignore[attr-defined]
    followers = [n.node_id for n in cluster.nodes if n.node_id != leader]  # type: ignore[attr-defined]
    where = TopicPartition(topic, 0)

    def watermark() -> int:  # asked of the leader alone: the followers may be frozen
        admin = cluster.node_admin(leader)  # type: ignore[attr-defined]
        return admin.list_offsets({where: OffsetSpec.latest()})[where].result().offset

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "1"})
    for follower in followers:
        cluster.pause_node(follower)  # type: ignore[attr-defined]
    try:
        for i in range(40):
            producer.produce(topic, f"r{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        assert log_end_offsets("127.0.0.1", port, topic, [0]) == {0: 40}
        assert watermark() == 0
    finally:
        for follower in followers:
            cluster.resume_node(follower)  # type: ignore[attr-defined]
    eventually(
        lambda: watermark() == 40, TIMEOUT_S, "the followers copying the 40 records", every_s=0.2
    )
    assert log_end_offsets("127.0.0.1", port, topic, [0]) == {0: 40}
    for follower in followers:
        cluster.wait_serving(follower, TIMEOUT_S)  # type: ignore[attr-defined]


def test_the_controller_role_finds_the_quorum_leader_kafka_reports(
    cluster: Cluster, tmp_path: Path
) -> None:
    found = find_node(cluster, "controller", random.Random(0), {})  # type: ignore[arg-type]
    source = tmp_path / "DescribeQuorum.java"
    source.write_text(DESCRIBE_QUORUM)
    java = java_command(kafka_classpath(cluster.version))  # type: ignore[arg-type]
    answer = subprocess.run(
        [*java, str(source), cluster.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (leader,) = re.findall(r"^quorum-leader=(\d+)$", answer.stdout, re.M)
    assert int(leader) == found
    assert active_controller(cluster) == found  # type: ignore[arg-type]


def test_the_controller_is_read_from_the_newest_epoch_of_the_quorum_logs() -> None:
    line = "INFO [RaftManager id={n}] Completed transition to {state}(epoch={e}{extra}) from X()"
    logs = [
        (1, line.format(n=1, state="Leader", e=1, extra="") + "\n"),
        (2, line.format(n=2, state="FollowerState", e=1, extra=", leader=1") + "\n"),
        (3, line.format(n=3, state="CandidateState", e=2, extra="")),
    ]
    assert controller_from_logs(logs) is None  # an election is under way
    logs.append((3, line.format(n=3, state="Leader", e=2, extra="")))
    assert controller_from_logs(logs) == 3


def test_any_node_is_chosen_with_the_seeded_random_source(cluster: Cluster) -> None:
    def choose(seed: int) -> int:
        return find_node(cluster, "any", random.Random(seed), {})  # type: ignore[arg-type]

    assert choose(7) == choose(7)
    assert {choose(seed) for seed in range(20)} == {1, 2, 3}


def test_the_brokers_holding_a_groups_offsets_are_those_kafka_uses(
    cluster: Cluster, topic: str
) -> None:
    groups = [cluster.unique_name("spared") for _ in range(4)]
    consumers = [new_consumer(cluster, group) for group in groups]
    try:
        for consumer in consumers:
            consumer.subscribe([topic])
        for consumer in consumers:
            eventually(
                lambda c=consumer: c.poll(0.2) is None and bool(c.assignment()),
                TIMEOUT_S,
                "joining",
                every_s=0.2,
            )
        holders = {group: group_offsets_holders(cluster, group) for group in groups}  # type: ignore[arg-type]
        coordinators = {group: group_coordinator(cluster, group) for group in groups}  # type: ignore[arg-type]
    finally:
        for consumer in consumers:
            consumer.close()
    # each coordinator logged, in its own words, which partition of __consumer_offsets holds it
    for group in groups:
        stabilized = re.compile(
            rf"GroupCoordinator id=(\d+) topic=__consumer_offsets partition=(\d+)\] "
            rf"Stabilized group {group} "
        )
        logged = {
            (int(m[1]), int(m[2])) for n in cluster.nodes for m in stabilized.finditer(n.log_text())
        }  # type: ignore[attr-defined]
        assert logged == {(coordinators[group], coordinator_partition(group, 10))}
        assert holders[group] == {1, 2, 3}  # offsets are replicated to all three brokers here


def test_a_spared_leader_passes_the_fault_to_the_next_partitions_leader(
    cluster: Cluster, topic: str
) -> None:
    leaders = [leader_of(cluster, topic, p) for p in range(3)]
    topics = {"input": topic}
    for spared in (1, 2, 3):
        for partition in range(3):
            found = find_node(
                cluster, "leader", random.Random(1), topics, "input", partition, {spared}
            )  # type: ignore[arg-type]
            following = [leaders[(partition + step) % 3] for step in range(3)]
            assert found == next(node for node in following if node != spared)
        anyone = {
            find_node(cluster, "any", random.Random(s), topics, spare={spared}) for s in range(20)
        }  # type: ignore[arg-type]
        assert anyone == {1, 2, 3} - {spared}
    with pytest.raises(BrokerFaultError, match="every partition of the input topic is led by"):
        find_node(cluster, "leader", random.Random(1), topics, spare={1, 2, 3})  # type: ignore[arg-type]


def test_the_led_partition_is_the_one_the_kill_chose() -> None:
    """The step's partition when its node leads it, else the next one the node leads."""
    from kafka_replay.faults import led_partition

    leaders = {"input/0": 1, "output/0": 2, "output/1": 3, "output/2": 1}
    assert led_partition(leaders, "output", 0, 2) == 0
    assert led_partition(leaders, "output", 0, 1) == 2  # output/0's leader was spared
    assert led_partition(leaders, "output", 2, 3) == 1  # wrapping round
    with pytest.raises(BrokerFaultError, match="broker 1 leads no partition of the side"):
        led_partition({**leaders, "side/0": 2}, "side", 0, 1)


def test_a_second_follower_fault_hits_the_partitions_other_follower(
    cluster: Cluster, topic: str
) -> None:
    leaders = [leader_of(cluster, topic, p) for p in range(3)]
    topics = {"input": topic}

    def follower(seed: int, spare: frozenset[int] = frozenset()) -> int:
        return find_node(cluster, "follower", random.Random(seed), topics, "input", 1, spare)  # type: ignore[arg-type]

    assert follower(7) == follower(7)
    assert {follower(seed) for seed in range(20)} == {1, 2, 3} - {leaders[1]}
    faults = BrokerFaults(cluster, topics, random.Random(3))
    for spared in (1, 2, 3):
        # the first partition from 1 on whose followers are not spared: the one it leads
        partition = next(p for p in (1, 2, 0) if leaders[p] == spared)
        node, found = faults.pause("follower", "input", 1, frozenset({spared}))
        try:
            assert node != spared and found["leaders_before"][f"input/{partition}"] == spared
            others = {follower(seed, frozenset({spared})) for seed in range(5)}
            assert others == {1, 2, 3} - {spared, node}  # the same partition's other follower
        finally:
            faults.hold(node, 0.1)
    with pytest.raises(BrokerFaultError, match="every partition of the input topic has a spared"):
        follower(1, frozenset({1, 2, 3}))


def test_a_pause_step_holds_the_leader_then_resumes_it(cluster: Cluster, topic: str) -> None:
    faults = BrokerFaults(cluster, {"input": topic}, random.Random(2))
    controller = active_controller(cluster)  # type: ignore[arg-type]
    node, found = faults.pause("leader", "input", 1)
    assert found["leaders_before"]["input/1"] == node
    assert found["controller"] == controller
    assert node not in cluster.running_ids()  # type: ignore[attr-defined]
    ended = faults.hold(node, 1.0)
    assert ended["resumed"] > found["paused"]
    assert node in cluster.running_ids()  # type: ignore[attr-defined]
    cluster.wait_serving(node, TIMEOUT_S)  # type: ignore[attr-defined]


def test_a_rolling_restart_restarts_every_node_controller_last(
    cluster: Cluster, topic: str
) -> None:
    controller = active_controller(cluster)  # type: ignore[arg-type]
    pids = {n.node_id: n.process.pid for n in cluster.nodes}  # type: ignore[attr-defined]
    found = BrokerFaults(cluster, {"input": topic}, random.Random(3)).rolling_restart(
        between_s=0.5, timeout=TIMEOUT_S
    )
    order = [entry["node"] for entry in found["nodes"]]
    assert sorted(order) == [1, 2, 3] and order[-1] == controller
    assert all(entry["in_sync"] for entry in found["nodes"])
    assert all(n.process.pid != pids[n.node_id] for n in cluster.nodes)  # type: ignore[attr-defined]
    assert set(found["leaders_after"]) == {"input/0", "input/1", "input/2"}
    assert len(cluster.admin().list_topics(timeout=30).brokers) == 3


def test_restore_brings_back_a_killed_and_a_paused_node(cluster: Cluster) -> None:
    cluster.kill_node(3)  # type: ignore[attr-defined]
    cluster.pause_node(2)  # type: ignore[attr-defined]
    assert cluster.needs_restore()  # type: ignore[attr-defined]
    assert sorted(cluster.restore(TIMEOUT_S)) == [2, 3]  # type: ignore[attr-defined]
    assert cluster.running_ids() == [1, 2, 3]  # type: ignore[attr-defined]


# --- definitions ----------------------------------------------------------------------------

KILL = 'do = "kill_broker"\nrole = "leader"\ntopic = "input"\npartition = 1'


def write(tmp_path: Path, name: str, brokers: str = "brokers = 3", kill: str = KILL) -> Path:
    """The input leader killed after 100 acks (steps 2 and 3), then restarted (step 4)."""
    steps = ['do = "wait_acks"\ncount = 100', kill, 'do = "restart_broker"']
    title = "the input partition's leader is killed mid-produce and comes back"
    return write_incident(tmp_path, name, steps, title, brokers)


def refusal(path: Path) -> DefinitionError:
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    return caught.value


def test_a_definition_asks_for_a_cluster_size(tmp_path: Path) -> None:
    assert load_incident(write(tmp_path, "three")).brokers == 3
    assert load_incident(write(tmp_path, "one", brokers="")).brokers == 1
    error = refusal(write(tmp_path, "none", brokers="brokers = 0"))
    assert (error.where, error.problem) == ("brokers", "0 brokers cannot run here; allowed: 1 to 5")
    assert str(error).startswith(f"{tmp_path / 'none.toml'}: brokers: ")
    error = refusal(write(tmp_path, "text", brokers='brokers = "3"'))
    assert error.where == "brokers" and "must be an integer" in error.problem


@pytest.mark.parametrize(
    ("kill", "where", "problem"),
    [
        (
            'do = "kill_broker"\nrole = "replica"',
            "steps[3].role",
            "must be one of leader, follower, controller, any",
        ),
        (
            'do = "pause_broker"\nrole = "follower"\ntopic = "output"\npartition = 3\nseconds = 2',
            "steps[3].partition",
            "partition 3 is not in the output topic (2 partitions); allowed: 0 to 1",
        ),
        (
            'do = "kill_broker"\npartition = 2',
            "steps[3].partition",
            "partition 2 is not in the input topic (2 partitions); allowed: 0 to 1",
        ),
        (
            'do = "pause_broker"\ntopic = "side_effects"\nseconds = 2',
            "steps[3].topic",
            "the incident has no side_effects topic; allowed: input, output",
        ),
        ('do = "pause_broker"\nseconds = 0', "steps[3].seconds", "must be more than 0, got 0"),
        (
            'do = "kill_broker"\nrole = "controller"\nspare_group_offsets = true',
            "steps[3].spare_group_offsets",
            "the active controller is one node; allowed with leader, follower or any",
        ),
        (
            'do = "pause_broker"',
            "steps[3].seconds",
            "is required",
        ),
    ],
    ids=lambda value: value.replace("incident", "definition"),  # -k incident: the catalog only
)
def test_broker_steps_refuse_what_cannot_be_done(
    tmp_path: Path, kill: str, where: str, problem: str
) -> None:
    error = refusal(write(tmp_path, "bad", kill=kill))
    assert (error.where, error.problem) == (where, problem)


def test_the_engine_kills_the_input_leader_mid_produce_and_restarts_it(
    tmp_path: Path, pool: ClusterPool, spark: SparkSession
) -> None:
    outcome, asked = replay_on_pool(write(tmp_path, "leader-killed"), pool, spark, tmp_path / "run")
    assert outcome.failed_stage is None, outcome.explain()
    assert asked == [ClusterSpec.of(brokers=3, broker_config=BROKER_CONFIG)]
    steps = read_stream(tmp_path / "run" / "events" / "steps.jsonl")
    kill, restart = (s for s in steps if s["do"] in ("kill_broker", "restart_broker"))
    assert kill["leaders_before"]["input/1"] == kill["node"]
    assert kill["leaders_after"]["input/1"] not in (kill["node"], -1)
    assert set(kill["leaders_before"]) == {"input/0", "input/1", "output/0", "output/1"}
    assert restart["node"] == kill["node"]
    assert kill["node"] not in restart["leaders_before"].values()
    assert outcome.verdict in ("exactly-once", "at-least-once"), json.dumps(outcome.to_json())
    cluster = pool.get(ClusterSpec.of(brokers=3, broker_config=BROKER_CONFIG))
    assert cluster.running_ids() == [1, 2, 3]  # type: ignore[attr-defined]


def test_broker_steps_refuse_a_node_the_cluster_does_not_have(
    tmp_path: Path, pool: ClusterPool, spark: SparkSession
) -> None:
    kill = 'do = "restart_broker"\nnode = 4'
    definition = write(tmp_path, "no-such-node", kill=kill)
    outcome, _ = replay_on_pool(definition, pool, spark, tmp_path / "run")
    assert outcome.failed_stage == "steps"
    assert outcome.error is not None and "no broker 4 in this cluster" in outcome.error


@pytest.mark.parametrize("kafka_backend", ["container"])
def test_container_nodes_are_killed_restarted_and_paused_the_same_way(
    kafka_cluster_factory: Callable[..., Cluster],
) -> None:
    """``docker kill -s SIGKILL``, ``docker start``, ``docker pause`` and ``unpause``."""
    cluster = kafka_cluster_factory(brokers=3, broker_config=BROKER_CONFIG).start()  # type: ignore[attr-defined]
    topic = cluster.create_topic("faults", 2, 3)
    faults = BrokerFaults(cluster, {"input": topic}, random.Random(4))
    killed = faults.kill("leader", "input", 0, timeout=TIMEOUT_S)
    assert killed["leaders_after"]["input/0"] not in (killed["node"], -1)
    produce_acked(cluster, topic, [("k", "v")], acks="all")
    assert faults.restart(timeout=TIMEOUT_S)["node"] == killed["node"]
    node, _ = faults.pause("any")
    assert not answers(cluster, node, timeout=3.0)
    faults.hold(node, 0.1)
    cluster.wait_serving(node, TIMEOUT_S)
    assert cluster.running_ids() == [1, 2, 3]
