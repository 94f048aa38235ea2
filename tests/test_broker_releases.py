"""Every tested Kafka release carries records both ways on every backend that runs Kafka.

CI round-trips the default release on both backends and the oldest on the embedded one; the
others are the matrix tier's (``./dev bench matrix brokers``), so CI builds one Kafka image and
fetches two releases, not three of each.
"""

from __future__ import annotations

import pytest

from kafka_replay.cluster import DEFAULT_KAFKA_VERSION, TESTED_KAFKA_VERSIONS, Cluster
from kafka_replay.cluster.backends import kafka_backends
from tests.kafka_helpers import consume_until, new_consumer, produce_acked


def _round_trips() -> list[object]:
    """Each release on each backend; in a container only the default release in CI."""
    return [
        pytest.param(version, backend, id=f"{version}-{backend}", marks=_tier(version, backend))
        for version in TESTED_KAFKA_VERSIONS
        for backend in kafka_backends()
    ]


def _tier(version: str, backend: str) -> tuple[pytest.MarkDecorator, ...]:
    """CI: the default release on both backends, and the oldest on the embedded one."""
    in_ci = version == DEFAULT_KAFKA_VERSION or (
        backend == "embedded" and version == TESTED_KAFKA_VERSIONS[-1]
    )
    return () if in_ci else (pytest.mark.matrix,)


@pytest.mark.parametrize(("kafka_version", "kafka_backend"), _round_trips())
def test_round_trip(kafka_cluster: Cluster, kafka_topic, kafka_version: str) -> None:
    topic = kafka_topic("round-trip", partitions=3)
    sent = {f"key-{i}": f"value-{i}" for i in range(200)}
    acked = produce_acked(kafka_cluster, topic, sent.items(), acks="all")
    assert len(acked) == 200

    consumer = new_consumer(kafka_cluster)
    consumer.subscribe([topic])
    try:
        got = consume_until(consumer, lambda seen: len(seen) >= 200)
    finally:
        consumer.close()
    assert {m.key().decode(): m.value().decode() for m in got} == sent
    assert len(got) == 200
    where = {(m.partition(), m.offset()) for m in got}
    assert where == {(m.partition(), m.offset()) for m in acked}
