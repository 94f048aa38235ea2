"""The Tansu backend: another vendor's Kafka-compatible broker, built from crates.io and run here.

Real Tansu throughout (built once with cargo and cached): a round trip with confluent-kafka,
the limits it declares, incidents that do not apply to it and one that runs on it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, Producer
from pyspark.sql import SparkSession

from kafka_replay.checker.sources import kafka_log, kafka_topic
from kafka_replay.checker.topic_ends import ending_offsets, listed_and_fetched_ends
from kafka_replay.cluster import Cluster, ClusterFor, ClusterNeeds
from kafka_replay.cluster.backends import backend_name, choose_backend, make_cluster
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.cluster.pool import ClusterPool, ClusterSpec
from kafka_replay.cluster.tansu import TANSU_NODE_ID, TansuCluster
from kafka_replay.cluster.versions import DEFAULT_TANSU_VERSION
from kafka_replay.definitions.catalog import catalog_dir, load_incidents, select
from kafka_replay.faults.brokers import BrokerFaults
from kafka_replay.history.group import group_members, group_stable
from kafka_replay.playing.runner import play_incident, run_incident
from kafka_replay.report.outcome import Outcome
from kafka_replay.waiting import poll
from tests.fault_incidents import write_incident

#: Why Tansu cannot be had here (no cargo to build it, none built), else None.
UNAVAILABLE = TansuCluster.unavailable(DEFAULT_TANSU_VERSION)
pytestmark = pytest.mark.timeout(600)
#: The tests that run real Tansu are the matrix tier (``./dev bench matrix tansu`` builds it
#: first, 9 to 30 minutes); CI keeps those that need no build.
needs_tansu = pytest.mark.skipif(
    UNAVAILABLE is not None, reason=f"tansu backend unavailable: {UNAVAILABLE}"
)


def test_backend_names_its_release() -> None:
    assert choose_backend("tansu") == f"tansu:{DEFAULT_TANSU_VERSION}"
    assert choose_backend("tansu:0.5.1") == "tansu:0.5.1"
    assert backend_name("tansu:0.5.1") == "tansu"
    for bad in ("tansu:latest", "embedded:4.4.0", "redpanda"):
        with pytest.raises(ValueError, match=r"is not one of|not a release number"):
            choose_backend(bad)


@pytest.mark.matrix
@needs_tansu
def test_a_round_trip_on_tansu_and_nothing_left_behind() -> None:
    with make_cluster("tansu").start() as tansu:
        (node,) = tansu.nodes
        process = psutil.Process(node.process.pid)  # type: ignore[attr-defined]
        assert tansu.label == f"Tansu {DEFAULT_TANSU_VERSION}"
        topic = tansu.create_topic("orders", 3)
        producer = Producer({"bootstrap.servers": tansu.bootstrap_servers})
        for i in range(50):
            producer.produce(topic, key=str(i % 5), value=f"order-{i}")
        assert producer.flush(10) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": tansu.bootstrap_servers,
                "group.id": "billing",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        values: list[bytes] = []

        def all_read() -> bool:
            message = consumer.poll(0.5)  # waits up to 0.5s itself
            if message is not None and message.error() is None:
                values.append(message.value())
            return len(values) >= 50

        poll(all_read, 30, every_s=0)  # on a time-out, the last assert says what was read
        # a member is in the group, yet its description names none: Stable is the sign
        assert group_stable(tansu.admin(), "billing")
        assert group_members(tansu.admin(), "billing") == 0
        consumer.close()
        assert sorted(values) == sorted(f"order-{i}".encode() for i in range(50))
        data_dir = tansu.data_dir
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    assert data_dir is not None and not data_dir.exists()


@pytest.mark.matrix
@needs_tansu
def test_the_only_broker_is_paused_and_resumed_and_serves_again() -> None:
    with make_cluster("tansu").start() as tansu:
        topic = tansu.create_topic("orders", 1)
        faults = BrokerFaults(tansu, {"input": topic}, random.Random(0))
        node, found = faults.pause("leader", "input", 0)
        assert found["node"] == TANSU_NODE_ID == node
        assert found["controller"] is None  # no KRaft quorum in Tansu's log
        assert tansu.running_ids() == []  # type: ignore[attr-defined]
        ended = faults.hold(node, 0.5)
        assert ended["leaders_paused"] is None  # nobody was left running to ask
        assert ended["leaders_after"] == {"input/0": TANSU_NODE_ID}
        producer = Producer({"bootstrap.servers": tansu.bootstrap_servers})
        producer.produce(topic, value=b"after the pause")
        assert producer.flush(10) == 0


@pytest.mark.matrix
@needs_tansu
def test_what_tansu_cannot_be_asked_for(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="runs one broker"):
        make_cluster("tansu", brokers=3)
    pool = ClusterPool(tmp_path)
    try:
        settings = ClusterSpec.of(None, 1, {"offsets.retention.minutes": 1}, "tansu")
        with pytest.raises(NotApplicable, match=r"offsets\.retention\.minutes=1.*cannot take"):
            pool.get(settings)
        # settings an incident can go without are left out: both requests share one broker
        assert pool.get(settings, optional=True) is pool.get(ClusterSpec.of(None, 1, None, "tansu"))
    finally:
        pool.close()


@pytest.fixture(scope="module")
def tansu_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPool]:
    pool = ClusterPool(tmp_path_factory.mktemp("tansu"))
    yield pool
    pool.close()


def on_tansu(pool: ClusterPool) -> ClusterFor:
    """The engine's ``cluster_for`` on the pool's Tansu, settings left out where it must."""

    def cluster_for(needs: ClusterNeeds) -> Cluster:
        return pool.get(ClusterSpec.needed(None, "tansu", needs), optional=True)

    return cluster_for


def replay_on_tansu(
    pool: ClusterPool, spark: SparkSession | None, name: str, profile: str, run_dir: Path
) -> Outcome:
    (incident,) = select(load_incidents((catalog_dir(),)), [name])  # type: ignore[arg-type]
    return run_incident(
        incident,
        profile,
        cluster_for=on_tansu(pool),
        spark=lambda: spark,
        run_dir=run_dir,  # type: ignore[arg-type,return-value]
    )


@pytest.mark.matrix
@needs_tansu
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("offset-retention-expiry", "offsets.retention.minutes=1 (essential: "),
        ("deal-flood", "step add_partitions: Tansu has no CreatePartitions"),
        ("leader-loss-acks-one", "3 brokers"),
    ],
)
def test_a_replay_tansu_cannot_host_does_not_apply(
    tansu_pool: ClusterPool, tmp_path: Path, name: str, why: str
) -> None:
    outcome = replay_on_tansu(tansu_pool, None, name, "vulnerable", tmp_path)
    assert not outcome.applicable and outcome.gate == "n/a"
    assert outcome.result == "not applicable" and not outcome.passed
    assert outcome.error is None and outcome.failed_stage is None
    assert any(why in reason for reason in outcome.reasons), outcome.reasons


@pytest.mark.matrix
@needs_tansu
def test_an_undeclared_setting_counts_as_essential(tansu_pool: ClusterPool, tmp_path: Path) -> None:
    write_incident(tmp_path, "ours", [], brokers="")  # sets min.insync.replicas, says not why
    (incident,) = load_incidents((tmp_path,)).values()
    assert incident.need("min.insync.replicas").kind == "essential"
    outcome = run_incident(
        incident,
        "vulnerable",
        cluster_for=on_tansu(tansu_pool),
        spark=lambda: None,  # type: ignore[arg-type,return-value]
        run_dir=tmp_path / "run",
    )
    assert not outcome.applicable, outcome.explain()
    assert "does not say why it sets it" in outcome.reasons[0]


#: What a run says when Tansu gave a redeployed or restarted consumer no partition in time.
NOT_JOINED = ("did not join its consumer group within", "has held no partition for")
#: Incidents (or one profile, ``name [profile]``) whose needs Tansu cannot meet, and why
#: (docs/vendors.md has the whole table).
NOT_APPLICABLE_ON_TANSU = {
    "deal-flood": "add_partitions",
    "partition-expansion-latest": "add_partitions",
    "retention-outran-consumer": "wait_retention",  # Tansu deletes nothing by retention.ms
    "producer-timestamp-retention": "wait_retention",
    "record-too-large [remediated]": "message.max.bytes",  # its fix is a broker setting
    "hanging-transaction": "abort_transactions",
    "leader-loss-acks-one": "3 brokers",
    "paused-leader-send-expiry": "3 brokers",
    "min-isr-blocked-sends": "5 brokers",
    "unclean-leader-election": "3 brokers",
    "compacted-state-resurrection": "wait_compaction",  # Tansu compacts no topic
    "protocol-migration": "group.coordinator.rebalance.protocols",
    "share-group-lock-expiry": "Tansu has no share groups",
    "offset-retention-expiry": "offsets.retention.minutes",
    "transactional-id-expiry": "transactional.id.expiration.ms",
    "mirror-failover-offsets": "step fail_over",  # its primary could not come back
    "flink-exactly-once-transaction-timeout": "Tansu has no EndTxn API",
}


class WouldStartTansu(Exception):
    """Where a run that Tansu can host would first ask it for something."""


def test_what_the_catalog_needs_of_tansu_is_decided_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI's test of the backend, which needs no Tansu build: the engine's own path from Tansu's
    declared limits (one broker, no broker settings, the capabilities it lacks) to each catalog
    run's applicability, up to the first request a run would send it. Every run the table
    names does not apply, with its reason; every other one goes on to ask Tansu for its topics.
    That Tansu then serves those runs is what the matrix tier's catalog run proves."""

    def first_request(*_: object, **__: object) -> None:
        raise WouldStartTansu

    monkeypatch.setattr(TansuCluster, "start", lambda cluster: cluster)  # started: not here
    monkeypatch.setattr(TansuCluster, "create_topic", first_request)
    pool = ClusterPool(tmp_path / "clusters")
    try:
        for incident in load_incidents((catalog_dir(),)).values():
            for profile in ("vulnerable", "remediated"):
                run = play_incident(
                    incident,
                    profile,
                    cluster_for=on_tansu(pool),
                    run_dir=tmp_path / incident.name / profile,
                )
                run.finish()
                outcome = run.outcome
                why = NOT_APPLICABLE_ON_TANSU.get(incident.name) or NOT_APPLICABLE_ON_TANSU.get(
                    f"{incident.name} [{profile}]"
                )
                if why is not None:
                    assert not outcome.applicable and why in outcome.reasons[0], outcome.reasons
                else:
                    assert outcome.applicable, outcome.reasons
                    assert outcome.error == "WouldStartTansu: ", outcome.error
    finally:
        pool.close()


@pytest.mark.matrix
@needs_tansu
@pytest.mark.timeout(1900)
def test_the_catalog_on_tansu_ends_each_run_in_a_pass_a_finding_or_not_applicable(
    tmp_path: Path,
) -> None:
    """Every run on Tansu is judged (a pass, or a failure whose reasons are the finding) or
    does not apply, with its reason; none breaks. What each shows is in docs/vendors.md."""
    command = [sys.executable, "-m", "kafka_replay.cli", "run", "--all", "--kafka-backend", "tansu",
               "--jobs", "2", "--report", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert len(runs) == 2 * len(load_incidents((catalog_dir(),))), done.stdout[-3000:]  # type: ignore[arg-type]
    # Tansu expires a departed member only when the group hears from someone (docs/vendors.md):
    # a redeployed or restarted consumer may wait longer than the harness waits for an app to
    # join its group, or for its requests. That run cannot be judged, and says why; any other
    # error is the harness's.
    broken = [r for r in runs if r["error"] and not any(s in r["error"] for s in NOT_JOINED)]
    assert broken == [], done.stdout[-3000:]
    for run in runs:
        why = NOT_APPLICABLE_ON_TANSU.get(run["incident"]) or NOT_APPLICABLE_ON_TANSU.get(
            f"{run['incident']} [{run['profile']}]"
        )
        if why is not None:
            assert run["gate"] == "n/a" and why in run["reasons"][0], run
        else:
            assert run["applicable"] and run["gate"] in ("pass", "FAIL"), run
            assert run["gate"] == "pass" or run["reasons"], run  # a finding says what it is
    findings = any(run["gate"] == "FAIL" for run in runs)
    unjudged = any(run["error"] for run in runs)  # a redeploy that never joined, only (above)
    assert done.returncode == (2 if unjudged else 1 if findings else 0), done.stderr[-2000:]
    # zombie-commit went without its session-timeout limit, and its commits were sampled
    zombie = next(r for r in runs if (r["incident"], r["profile"]) == ("zombie-commit",
                                                                      "vulnerable"))  # fmt: skip
    assert list(zombie["settings_not_applied"]) == ["group.min.session.timeout.ms"]
    assert zombie["settings_not_applied"]["group.min.session.timeout.ms"].startswith("limit: ")
    offsets = tmp_path / "runs" / "zombie-commit-vulnerable" / "events" / "offsets.jsonl"
    lines = offsets.read_text().splitlines()
    assert lines and all('"sampled":true' in line for line in lines)
    assert zombie["symptoms"]["committed_offset_regressions"] is not None


@pytest.mark.matrix
@needs_tansu
def test_behind_a_proxy_tansu_advertises_it() -> None:
    """Its one listener is advertised at the proxy: every client goes through the fault."""
    with make_cluster("tansu", network_faults=True).start() as tansu:
        proxy_port = tansu.nodes[0].address.proxy_port
        assert tansu.client_bootstrap_servers == f"127.0.0.1:{proxy_port}"
        (broker,) = tansu.admin().list_topics(timeout=10).brokers.values()
        assert (broker.id, broker.port) == (TANSU_NODE_ID, proxy_port)
        topic = tansu.create_topic("slow", 1)
        producer = Producer({"bootstrap.servers": tansu.client_bootstrap_servers})
        producer.produce(topic, value=b"warm")
        assert producer.flush(10) == 0
        assert tansu.proxy is not None
        tansu.proxy.add_toxic(tansu.proxy_name(TANSU_NODE_ID), "slow", "latency", "from_broker",
                              {"latency": 400})  # fmt: skip
        started = time.monotonic()
        producer.produce(topic, value=b"late")
        assert producer.flush(10) == 0
        assert time.monotonic() - started >= 0.4


@pytest.mark.matrix
@needs_tansu
def test_the_checker_reads_to_the_real_log_end_where_a_broker_lists_a_wrong_one(
    kafka_cluster: Cluster, spark: SparkSession
) -> None:
    """Tansu lists a batch of 300 records as ending one past its first: the checker still
    reads all 300 (Spark's Kafka source reads to the end it is given); Kafka lists the end.
    Behind them, a transaction left open: read_committed reads stop before it, and do not
    fail (Spark, given an end past what a read_committed reader can reach, would)."""
    with make_cluster("tansu").start() as tansu:
        for cluster, listed_end in ((tansu, 1), (kafka_cluster, 300)):
            topic = cluster.create_topic("batched", 1)
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 500})
            for i in range(300):
                producer.produce(topic, key=f"k{i}", value=f'{{"event_id":"e{i}"}}')
            assert producer.flush(10) == 0
            ends = listed_and_fetched_ends(cluster.bootstrap_servers, topic)
            assert ends == {0: (listed_end, 300)}, cluster
            expected = "latest" if listed_end == 300 else json.dumps({topic: {"0": 300}})
            assert ending_offsets(cluster.bootstrap_servers, topic) == expected
            log = kafka_log(spark, cluster.bootstrap_servers, topic)
            assert log.count() == 300 and log.agg({"offset": "max"}).first()[0] == 299
            transactional = Producer(
                {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": topic}
            )
            transactional.init_transactions(30)
            transactional.begin_transaction()
            for i in range(9):
                transactional.produce(topic, value=f'{{"event_id":"open-{i}"}}')
            assert transactional.flush(10) == 0
            committed = kafka_topic(spark, cluster.bootstrap_servers, topic, "read_committed")
            uncommitted = kafka_topic(spark, cluster.bootstrap_servers, topic, "read_uncommitted")
            assert uncommitted.count() == 309
            # Kafka: the 300 before the open transaction; Tansu 0.6.0: none (docs/vendors.md)
            assert committed.count() == (300 if cluster is kafka_cluster else 0)
            if cluster is kafka_cluster:  # Tansu has no EndTxn to end it with
                transactional.abort_transaction(30)
