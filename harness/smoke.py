"""The smoke replay: the smallest end-to-end run, proving Kafka, identity and accounting work.

Records stamped with a unique ``event_id`` and a per-key ``seq`` go into a topic through an
acknowledging producer; a consumer group reads them back; every acknowledged record must be
read exactly once and in ``seq`` order per key. The incident catalog grows from this.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Message, Producer

from harness.cluster import Cluster

CONSUME_TIMEOUT_S = 60.0


@dataclass
class SmokeResult:
    acked: int
    consumed: int
    lost: int
    duplicated: int
    out_of_order_keys: int
    produce_s: float
    consume_s: float
    errors: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (self.lost or self.duplicated or self.out_of_order_keys or self.errors)


def run_smoke(
    cluster: Cluster, records: int = 2000, keys: int = 50, partitions: int = 3
) -> SmokeResult:
    topic = cluster.create_topic("smoke", partitions)
    try:
        started = time.monotonic()
        acked, errors = _produce(cluster, topic, records, keys)
        produced = time.monotonic()
        seen = _consume(cluster, topic, set(acked))
        consumed = time.monotonic()
    finally:
        cluster.delete_topics([topic])
    counts = Counter(event_id for event_id, _, _ in seen)
    by_key: dict[str, list[int]] = defaultdict(list)
    for _, key, seq in seen:
        by_key[key].append(seq)
    return SmokeResult(
        acked=len(acked),
        consumed=len(seen),
        lost=len(set(acked) - set(counts)),
        duplicated=sum(1 for c in counts.values() if c > 1),
        out_of_order_keys=sum(1 for seqs in by_key.values() if seqs != sorted(seqs)),
        produce_s=produced - started,
        consume_s=consumed - produced,
        errors=errors,
    )


def _produce(cluster: Cluster, topic: str, records: int, keys: int) -> tuple[list[str], list[str]]:
    producer = Producer(cluster.client_config(**{"enable.idempotence": True, "linger.ms": 5}))
    acked: list[str] = []
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append(str(error))
        else:
            acked.append(json.loads(message.value())["event_id"])

    seq: Counter[str] = Counter()
    for i in range(records):
        key = f"key-{i % keys}"
        event_id = str(uuid.uuid4())
        value = json.dumps({"event_id": event_id, "key": key, "seq": seq[key]})
        seq[key] += 1
        producer.produce(topic, value, key, headers={"event_id": event_id}, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(30)
    if remaining:
        errors.append(f"{remaining} record(s) not acknowledged within 30s")
    return acked, errors


def _consume(cluster: Cluster, topic: str, expected: set[str]) -> list[tuple[str, str, int]]:
    consumer = Consumer(
        cluster.client_config(
            **{
                "group.id": cluster.unique_name("smoke"),
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
    )
    consumer.subscribe([topic])
    seen: list[tuple[str, str, int]] = []
    found: set[str] = set()
    deadline = time.monotonic() + CONSUME_TIMEOUT_S
    try:
        while found < expected and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(500, timeout=0.5) if m.error() is None]
            for message in batch:
                value = json.loads(message.value())
                seen.append((value["event_id"], value["key"], value["seq"]))
                found.add(value["event_id"])
            if batch:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen
