"""Small helpers the tests share: wait until something happens, produce with acks, consume
until a condition, commit once the coordinator takes it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from kafka_replay.cluster import Cluster
from kafka_replay.waiting import poll, wait_for

T = TypeVar("T")


def eventually(
    condition: Callable[[], T | None], timeout: float, what: str, every_s: float = 0.1
) -> T:
    """``condition()``'s first answer, asked every ``every_s`` seconds; the test fails with
    "``what`` did not happen within ``timeout``s" when it has none by then.

    As in :mod:`kafka_replay.waiting`, only ``None`` and ``False`` are "not yet": a condition
    that answers with a count or a collection says ``bool(...)`` to be waited on while empty.
    """
    return wait_for(
        condition,
        timeout,
        f"{what} did not happen within {timeout}s",
        every_s=every_s,
        error=AssertionError,
    )


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

    def consumed() -> bool:
        for message in consumer.consume(100, timeout=0.2):  # waits up to 0.2s itself
            if message.error() is None:
                messages.append(message)
            elif message.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError(f"consumer error: {message.error()}")
        return bool(done(messages))

    if not done(messages):
        wait_for(
            consumed,
            timeout,
            lambda: f"condition not met in {timeout}s; got {len(messages)} messages",
            every_s=0,
            error=AssertionError,
        )
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
    refusals: list[KafkaException] = []

    def taken() -> bool:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() not in COORDINATOR_LOADING:
                raise
            refusals.append(exc)
            return False
        return True

    if not poll(taken, timeout, every_s=0.2):
        raise refusals[-1]  # still loading at the deadline: its last answer


def new_consumer(cluster: Cluster, group: str | None = None, **config: Any) -> Consumer:
    settings = {
        "group.id": group or cluster.unique_name("group"),
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **config,
    }
    return Consumer(cluster.client_config(**settings))
