"""Every backend runs real Kafka: clients, groups, transactions and config behave as such.

Each test runs on the embedded backend and in containers (skipped where Docker is absent).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer, TopicPartition

from kafka_replay.cluster import BrokerDiedError, BrokerStartError, Cluster
from kafka_replay.cluster.backends import kafka_backends
from kafka_replay.waiting import wait_for
from tests.kafka_helpers import commit_taken, consume_until, new_consumer, produce_acked

pytestmark = pytest.mark.parametrize("kafka_backend", kafka_backends())


def test_group_of_two_rebalances_and_both_get_partitions(
    kafka_cluster: Cluster, kafka_topic
) -> None:
    topic = kafka_topic("rebalance", partitions=4)
    group = kafka_cluster.unique_name("group")
    first, second = new_consumer(kafka_cluster, group), new_consumer(kafka_cluster, group)
    assignments: dict[str, set[int]] = {"first": set(), "second": set()}

    def tracker(name: str):
        def on_assign(consumer, partitions):
            assignments[name] = {p.partition for p in partitions}

        return on_assign

    def alone_owns_all() -> bool:  # alone, it owns everything
        first.poll(0.2)  # waits up to 0.2s itself
        return len(assignments["first"]) == 4

    def both_share_all() -> bool:
        first.poll(0.2)
        second.poll(0.2)
        both = bool(assignments["first"] and assignments["second"])
        return both and assignments["first"] | assignments["second"] == {0, 1, 2, 3}

    first.subscribe([topic], on_assign=tracker("first"))
    try:
        started = time.monotonic()
        alone = "the first member never got all 4 partitions"
        wait_for(alone_owns_all, 30, alone, every_s=0, error=AssertionError)
        second.subscribe([topic], on_assign=tracker("second"))
        wait_for(  # the two waits have 60s between them, the first at most 30s
            both_share_all,
            60 - (time.monotonic() - started),
            lambda: f"no rebalance to two members: {assignments}",
            every_s=0,
            error=AssertionError,
        )
    finally:
        first.close()
        second.close()
    assert not assignments["first"] & assignments["second"]


def test_read_committed_sees_only_committed_transactions(
    kafka_cluster: Cluster, kafka_topic
) -> None:
    topic = kafka_topic("txn")
    producer = Producer(kafka_cluster.client_config(**{"transactional.id": topic}))
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"committed-{i}")
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"aborted-{i}")
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, "committed-last")
    producer.commit_transaction(30)

    def values(isolation: str) -> list[str]:
        consumer = new_consumer(kafka_cluster, **{"isolation.level": isolation})
        consumer.subscribe([topic])
        try:
            got = consume_until(
                consumer, lambda seen: any(m.value() == b"committed-last" for m in seen)
            )
        finally:
            consumer.close()
        return [m.value().decode() for m in got]

    committed = values("read_committed")
    assert committed == [f"committed-{i}" for i in range(5)] + ["committed-last"]
    # The aborted records really are in the log: a read_uncommitted consumer sees them.
    uncommitted = values("read_uncommitted")
    assert [v for v in uncommitted if v.startswith("aborted")] == [f"aborted-{i}" for i in range(5)]


@pytest.mark.kafka(broker_config={"message.max.bytes": 4096})
def test_broker_config_override_takes_effect(kafka_cluster: Cluster, kafka_topic) -> None:
    topic = kafka_topic("small-messages")
    produce_acked(kafka_cluster, topic, [("fits", b"x" * 1000)])
    with pytest.raises(AssertionError, match=r"(?i)too large"):
        produce_acked(kafka_cluster, topic, [("too-big", b"x" * 20_000)])


@pytest.mark.kafka(brokers=3)
def test_three_brokers_serve_a_replication_factor_3_topic(
    kafka_cluster: Cluster, kafka_topic
) -> None:
    topic = kafka_topic("replicated", partitions=3, replication_factor=3)
    metadata = kafka_cluster.admin().list_topics(topic, timeout=10)
    assert len(metadata.brokers) == 3
    partitions = metadata.topics[topic].partitions.values()
    assert all(sorted(p.replicas) == [1, 2, 3] for p in partitions)
    assert {p.leader for p in partitions} <= {1, 2, 3}

    acked = produce_acked(kafka_cluster, topic, [(f"k{i}", f"v{i}") for i in range(30)], acks="all")
    consumer = new_consumer(kafka_cluster)
    consumer.subscribe([topic])
    try:
        got = consume_until(consumer, lambda seen: len(seen) >= len(acked))
    finally:
        consumer.close()
    assert sorted(m.value() for m in got) == sorted(m.value() for m in acked)


def test_broker_with_invalid_config_fails_fast_with_its_log(kafka_cluster_factory) -> None:
    cluster = kafka_cluster_factory(broker_config={"num.io.threads": "not-a-number"})
    with pytest.raises(BrokerStartError) as failure:
        cluster.start(timeout=60)
    message = str(failure.value)
    assert "num.io.threads" in message  # Kafka's own complaint, from the log tail
    assert "broker-1.log" in message
    assert all(not node.alive() for node in cluster.nodes)
    assert cluster.data_dir is not None and not cluster.data_dir.exists()


def _crash(node) -> None:
    """Kill a node behind the harness's back, as a crash would."""
    if hasattr(node, "process"):
        node.process.kill()
    else:
        node.container.get_wrapped_container().kill()
    wait_for(lambda: not node.alive(), 30, "the node did not die", error=AssertionError)


def test_a_dead_broker_is_reported_with_its_log(kafka_cluster_factory) -> None:
    with kafka_cluster_factory() as cluster:
        cluster.check_alive()
        _crash(cluster.nodes[0])
        with pytest.raises(BrokerDiedError, match="broker 1 exited"):
            cluster.check_alive()


def test_committed_offsets_survive_consumer_restart(kafka_cluster: Cluster, kafka_topic) -> None:
    """Group state lives in the real broker: a new consumer resumes where the old one committed."""
    topic = kafka_topic("resume")
    produce_acked(kafka_cluster, topic, [(None, f"v{i}") for i in range(10)])
    group = kafka_cluster.unique_name("group")
    consumer = new_consumer(kafka_cluster, group)
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        consume_until(consumer, lambda seen: len(seen) >= 4)
        commit_taken(consumer, [TopicPartition(topic, 0, 4)])
    finally:
        consumer.close()
    resumed = new_consumer(kafka_cluster, group)
    try:
        committed = resumed.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        resumed.close()
    assert committed[0].offset == 4


@pytest.mark.kafka(features={"transaction.version": 1})
def test_a_feature_level_chosen_at_format_is_the_clusters(kafka_cluster: Cluster) -> None:
    """Kafka 4.x finalizes transaction.version 2 by default; the cluster says 1."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest
    from kio.schema.api_versions.v3.response import ApiVersionsResponse

    from kafka_replay.cluster.kafka_ask import ask

    host, port = kafka_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    answer = ask(host, int(port), request, ApiVersionsResponse)
    levels = {key.name: int(key.max_version_level) for key in answer.finalized_features}
    assert levels["transaction.version"] == 1, levels
