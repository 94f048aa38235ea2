"""Network faults through the proxy in front of each broker of a real cluster.

Each fault is shown doing what it says to real Kafka traffic: latency delays a produce by at
least what was asked, a bandwidth limit slows a large record to its rate, a blackhole makes
requests time out, a reset breaks the connection with a TCP RST, a cut-off refuses
connections. Faults hit the clients' path only: the brokers' direct listener, which the
harness's observers use, answers throughout. The last tests replay small incidents with
network steps through the engine.
"""

from __future__ import annotations

import json
import random
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from kafka_replay.cluster import Cluster
from kafka_replay.cluster.nodes import NodeCluster
from kafka_replay.cluster.pool import ClusterPool, ClusterSpec
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.faults import NetworkFaults, toxic_attributes
from kafka_replay.faults.brokers import BrokerFaultError, partition_leaders
from kafka_replay.history import read_stream
from tests.fault_incidents import replay_on_pool, write_incident

SPEC = ClusterSpec.of(brokers=3, broker_config={"min.insync.replicas": 2}, network_faults=True)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPool]:
    pool = ClusterPool(tmp_path_factory.mktemp("network"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def cluster(pool: ClusterPool) -> Iterator[NodeCluster]:
    """The module's cluster; every test must leave its proxies healed (the pool reuses it)."""
    cluster = pool.get(SPEC)
    assert isinstance(cluster, NodeCluster)
    yield cluster
    assert not cluster.needs_restore(), "a test left a network fault in place"


@pytest.fixture
def topic(cluster: NodeCluster) -> Iterator[str]:
    name = cluster.create_topic("network", 1, 3)
    yield name
    cluster.delete_topics([name])


@pytest.fixture
def faults(cluster: NodeCluster, topic: str) -> Iterator[NetworkFaults]:
    faults = NetworkFaults(cluster, {"input": topic}, random.Random(3))
    yield faults
    faults.heal()


def leader(cluster: NodeCluster, topic: str) -> int:
    return partition_leaders(cluster, {"input": topic})["input/0"]


def timed_produce(cluster: Cluster, topic: str, value: bytes, **config: object) -> float:
    """Seconds from send to ack through the proxies; raises the delivery error if any."""
    producer = Producer(
        {"bootstrap.servers": cluster.client_bootstrap_servers, "log_level": 0, **config}
    )
    producer.list_topics(topic, timeout=30)  # connections and metadata first: not timed
    outcome: list[KafkaError | Message] = []
    started = time.monotonic()
    producer.produce(topic, value, on_delivery=lambda e, m: outcome.append(e or m))
    producer.flush(60)
    elapsed = time.monotonic() - started
    assert outcome, "no delivery report within 60 s"
    if isinstance(outcome[0], KafkaError):
        raise KafkaException(outcome[0])
    return elapsed


def api_versions_answer(port: int) -> bytes:
    """Send Kafka's ApiVersions request (v0) on a fresh connection; return the raw answer."""
    client = b"network-test"
    body = struct.pack(">hhih", 18, 0, 7, len(client)) + client
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(struct.pack(">i", len(body)) + body)
        return connection.recv(4096)


def test_clients_reach_each_broker_through_its_own_proxy(cluster: NodeCluster) -> None:
    proxies = {n.node_id: n.address.proxy_port for n in cluster.nodes}
    direct = {n.node_id: n.port for n in cluster.nodes}
    assert cluster.client_bootstrap_servers != cluster.bootstrap_servers
    through_proxy = AdminClient({"bootstrap.servers": cluster.client_bootstrap_servers})
    brokers = through_proxy.list_topics(timeout=30).brokers
    assert {b.id: b.port for b in brokers.values()} == proxies  # what Kafka advertises
    observer = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert {b.id: b.port for b in observer.list_topics(timeout=30).brokers.values()} == direct
    routes = {name: p["upstream"] for name, p in cluster.proxy.proxies().items()}  # type: ignore[union-attr]
    assert set(routes) == {f"broker-{node}" for node in proxies}


def test_latency_delays_a_produce_by_at_least_what_was_asked(
    cluster: NodeCluster, topic: str, faults: NetworkFaults
) -> None:
    names = faults.start("latency", [leader(cluster, topic)], "to_broker", {"latency": 2000})
    assert timed_produce(cluster, topic, b"slow") >= 2.0
    faults.heal(names)
    # Far below the delay even on a loaded machine: the quickest of three healed produces.
    assert min(timed_produce(cluster, topic, b"fast") for _ in range(3)) < 2.0


def test_a_bandwidth_limit_slows_a_large_record_to_its_rate(
    cluster: NodeCluster, topic: str, faults: NetworkFaults
) -> None:
    faults.start("bandwidth", [leader(cluster, topic)], "to_broker", {"rate": 200})
    assert timed_produce(cluster, topic, b"x" * 600_000, **{"linger.ms": 0}) >= 2.0  # 600KB/200KB/s


def test_a_blackhole_makes_requests_time_out_while_the_broker_runs(
    cluster: NodeCluster, topic: str, faults: NetworkFaults
) -> None:
    node = leader(cluster, topic)
    names = faults.start("blackhole", [node], "both", toxic_attributes("blackhole", {}))
    with pytest.raises(KafkaException) as caught:
        timed_produce(cluster, topic, b"lost", **{"message.timeout.ms": 3000})
    assert caught.value.args[0].code() == KafkaError._MSG_TIMED_OUT
    direct = AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.node(node).port}"})
    assert node in direct.list_topics(timeout=10).brokers  # the broker itself answers
    faults.heal(names)
    timed_produce(cluster, topic, b"through")


def test_a_reset_breaks_the_connection_with_a_tcp_reset(
    cluster: NodeCluster, faults: NetworkFaults
) -> None:
    port = cluster.nodes[0].address.proxy_port
    assert port is not None
    assert len(api_versions_answer(port)) > 8  # a real answer without the fault
    names = faults.start("reset", [1], "from_broker", {"timeout": 0})
    with pytest.raises(ConnectionResetError):
        api_versions_answer(port)
    faults.heal(names)
    assert len(api_versions_answer(port)) > 8


def test_a_cut_off_broker_refuses_clients_but_not_the_cluster(
    cluster: NodeCluster, faults: NetworkFaults
) -> None:
    node = cluster.nodes[1]
    names = faults.start("cut_off", [node.node_id], "both", {})
    with pytest.raises(ConnectionRefusedError):
        api_versions_answer(node.address.proxy_port)  # type: ignore[arg-type]
    assert len(api_versions_answer(node.port)) > 8  # replication and observers go direct
    assert cluster.needs_restore()
    faults.heal(names)
    assert len(api_versions_answer(node.address.proxy_port)) > 8  # type: ignore[arg-type]


def test_the_pool_heals_what_a_run_left_before_reusing_the_cluster(
    pool: ClusterPool, cluster: NodeCluster, faults: NetworkFaults
) -> None:
    faults.start("latency", [1, 2], "both", {"latency": 100, "jitter": 10})
    faults.active.clear()  # as if the run had died without healing
    assert cluster.needs_restore()
    assert pool.get(SPEC) is cluster
    assert not cluster.needs_restore()


def test_network_faults_are_refused_on_a_cluster_without_proxies(pool: ClusterPool) -> None:
    plain = pool.get(ClusterSpec.of())
    with pytest.raises(BrokerFaultError, match="need a proxy in front of each broker"):
        NetworkFaults(plain, {}, random.Random(1))


SPIKES = """do = "network_fault"
fault = "latency"
role = "all"
latency_ms = 300
jitter_ms = 50
seconds = 1
times = 2
gap_s = [0.5, 1]"""


def write(tmp_path: Path, name: str, fault: str = SPIKES) -> Path:
    """Two latency spikes on every broker (step 2) under 300 records."""
    return write_incident(tmp_path, name, [fault], "network faults under a running app", count=300)


@pytest.mark.parametrize(
    ("fault", "where", "problem"),
    [
        ('do = "network_fault"\nfault = "jam"', "steps[2].fault", "must be one of"),
        ('do = "network_fault"\nfault = "latency"', "steps[2].latency_ms", "needs latency_ms"),
        (
            'do = "network_fault"\nfault = "bandwidth"\nrate_kb_s = 0',
            "steps[2].rate_kb_s",
            "needs rate_kb_s above 0",
        ),
        (
            'do = "network_fault"\nfault = "latency"\nlatency_ms = 10\njitter_ms = 20',
            "steps[2].jitter_ms",
            "must be 0 to latency_ms (10), got 20",
        ),
        (
            'do = "network_fault"\nfault = "cut_off"\ndirection = "to_broker"',
            "steps[2].direction",
            "both ways",
        ),
        ('do = "network_fault"\nfault = "reset"\ntimes = 3', "steps[2].times", "needs seconds"),
        (
            'do = "network_fault"\nfault = "blackhole"\nrole = "follower"',
            "steps[2].role",
            "must be one of leader, controller, any, all",
        ),
        (
            'do = "network_fault"\nfault = "reset"\ndirection = "up"',
            "steps[2].direction",
            "must be one of both, to_broker, from_broker",
        ),
    ],
)
def test_network_steps_refuse_what_cannot_be_done(
    tmp_path: Path, fault: str, where: str, problem: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, "bad", fault))
    assert caught.value.where == where
    assert problem in caught.value.problem


def test_the_engine_plays_latency_spikes_on_every_broker_and_heals_them(
    tmp_path: Path, pool: ClusterPool, spark: SparkSession
) -> None:
    definition = write(tmp_path, "spikes")
    assert load_incident(definition).network_faults
    outcome, asked = replay_on_pool(definition, pool, spark, tmp_path / "run")
    assert outcome.failed_stage is None, outcome.explain()
    assert asked == [SPEC]
    (fault,) = [
        s
        for s in read_stream(tmp_path / "run" / "events" / "steps.jsonl")
        if s["do"] == "network_fault"
    ]
    assert [o["nodes"] for o in fault["occurrences"]] == [[1, 2, 3], [1, 2, 3]]
    assert all(o["ended"] - o["started"] >= 1.0 for o in fault["occurrences"])
    assert (fault["latency"], fault["jitter"]) == (300, 50)
    assert outcome.verdict in ("exactly-once", "at-least-once"), json.dumps(outcome.to_json())
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["bootstrap_servers"] == pool.get(SPEC).client_bootstrap_servers


@pytest.mark.parametrize("kafka_backend", ["container"])
def test_container_brokers_sit_behind_proxies_the_same_way(
    kafka_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = kafka_cluster_factory(brokers=1, network_faults=True).start()  # type: ignore[attr-defined]
    topic = cluster.create_topic("network")
    faults = NetworkFaults(cluster, {"input": topic}, random.Random(2))
    faults.start("latency", [1], "from_broker", {"latency": 400})
    assert timed_produce(cluster, topic, b"slow") >= 0.4
    faults.heal()
    assert not cluster.needs_restore()  # type: ignore[attr-defined]
