"""Small client helpers the broker tests share: produce with acks, consume until a condition,
commit once the coordinator takes it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from kafka_replay.cluster import Cluster


def produce_acked(
    cluster: Cluster,
    topic: str,
    records: Iterable[tuple[str | None, bytes | str]],
    **config: Any,
) -> list[Message]:
    """Produce ``(key, value)`` pairs and return the acknowledged messages, raising on errors."""
    producer = Producer(cluster.client_config(**config))
    acked: list[Message] = []
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        (errors if error else acked).append(error or message)  # type: ignore[arg-type]

    for key, value in records:
        producer.produce(topic, value, key, on_delivery=on_delivery)
    assert producer.flush(30) == 0, "records still unacknowledged after 30s"
    if errors:
        raise AssertionError(f"produce failed: {errors[0]}")
    return acked


def consume_until(
    consumer: Consumer,
    done: Callable[[list[Message]], bool],
    timeout: float = 30.0,
) -> list[Message]:
    """Poll ``consumer`` until ``done(messages)`` holds; fail with a count if it never does."""
    messages: list[Message] = []
    deadline = time.monotonic() + timeout
    while not done(messages):
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout}s; got {len(messages)} messages")
        for message in consumer.consume(100, timeout=0.2):
            if message.error() is None:
                messages.append(message)
            elif message.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError(f"consumer error: {message.error()}")
    return messages


#: A commit's answers while a new broker's group coordinator loads its partitions.
COORDINATOR_LOADING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
}


def commit_taken(consumer: Consumer, offsets: list[TopicPartition], timeout: float = 60.0) -> None:
    """Commit ``offsets`` synchronously, sent again while the coordinator is still loading (a
    new broker's first commit meets that); any other refusal is raised."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as exc:
            if exc.args[0].code() not in COORDINATOR_LOADING or time.monotonic() > deadline:
                raise
        time.sleep(0.2)  # the next try; the loop ends when one is taken


def new_consumer(cluster: Cluster, group: str | None = None, **config: Any) -> Consumer:
    settings = {
        "group.id": group or cluster.unique_name("group"),
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **config,
    }
    return Consumer(cluster.client_config(**settings))
