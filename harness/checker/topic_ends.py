"""Where a topic's log really ends, for brokers whose listed end is wrong.

Spark's Kafka source reads a topic "to the latest offset", which it asks the broker for
(ListOffsets). Apache Kafka answers the log end; Tansu 0.6.0 answers the last batch's base
offset plus one, so a batch of many records looks like one and the rest of the log is never
read: the checker would count records the log holds as lost. A fetch's high watermark is
right on both, so each partition is read from its last listed record until the consumer
reaches the end of the partition: on Apache Kafka that is one record, on Tansu the last batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_replay.history.stable_offsets import held_partitions
from kafka_replay.waiting import poll

#: How long the probe may take per topic before it gives up and trusts the listed end.
PROBE_TIMEOUT_S = 30.0
#: The longest a broker holds a fetch of the checker's (this probe's, Spark's reads') waiting
#: for records: a fetch at the end returns at once, not after the 500 ms default.
FETCH_WAIT_MS = 10


def listed_and_fetched_ends(
    bootstrap_servers: str, topic: str, isolation: str = "read_uncommitted"
) -> dict[int, tuple[int, int]]:
    """Per partition: the end the broker lists, and the end a fetch reaches, for a reader of
    that isolation (``read_committed`` ends at the last stable offset, before open
    transactions)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "kafka-replay-log-end",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            # a 500 ms wait at the end was most of a probe, paid for each topic a check reads
            "fetch.wait.max.ms": FETCH_WAIT_MS,
            "isolation.level": isolation,
            "log_level": 0,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        listed = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        fetched = dict(listed)
        waiting = {p for p, end in listed.items() if end > 0}
        # from the last record listed: on Tansu the base of the last batch, which a fetch
        # returns whole (a fetch from inside a batch returns nothing of it)
        consumer.assign([TopicPartition(topic, p, listed[p] - 1) for p in waiting])

        def read_one() -> bool:
            """One more record (or a partition's end) read; whether every partition ended."""
            message = consumer.poll(0.5) if waiting else None
            error = message.error() if message is not None else None
            if message is not None and error is None:
                fetched[message.partition()] = message.offset() + 1
            elif error is not None and error.code() == KafkaError._PARTITION_EOF:
                fetched[message.partition()] = max(fetched[message.partition()], message.offset())
                waiting.discard(message.partition())
            return not waiting

        poll(read_one, PROBE_TIMEOUT_S, every_s=0)
        return {p: (listed[p], fetched[p]) for p in partitions}
    finally:
        consumer.close()


def ending_offsets(bootstrap_servers: str, topic: str, isolation: str = "read_uncommitted") -> str:
    """Spark's ``endingOffsets`` for the whole of ``topic``: ``latest`` where the broker lists
    the log end (Apache Kafka), else each partition's end as a fetch of that isolation reaches
    it (past it, a read_committed reader would wait for records it may never see)."""
    ends = listed_and_fetched_ends(bootstrap_servers, topic, isolation)
    if all(listed == fetched for listed, fetched in ends.values()):
        return "latest"
    return json.dumps({topic: {str(p): fetched for p, (_, fetched) in sorted(ends.items())}})


#: A topic's read: (bootstrap servers, topic, isolation).
Read = tuple[str, str, str]


def asked_together(
    reads: Iterable[Read], held_in: tuple[str, str] | None = None
) -> tuple[dict[Read, str], dict[int, int] | None]:
    """Each read's :func:`ending_offsets`, and the partitions an open transaction holds in
    ``held_in`` (``(bootstrap servers, topic)``; None when not asked), asked of the brokers at
    once: each is a client's round trips (50-70 ms), which a check paid one after the other
    for each topic it reads."""
    unique = list(dict.fromkeys(reads))
    with ThreadPoolExecutor(max_workers=len(unique) + 1) as pool:
        ends = {read: pool.submit(ending_offsets, *read) for read in unique}
        held = pool.submit(held_partitions, *held_in) if held_in is not None else None
        return {read: end.result() for read, end in ends.items()}, held and held.result()


def log_starts(bootstrap_servers: str, topic: str) -> dict[int, int]:
    """Per partition of ``topic``: where its log starts now (the low watermark), past every
    record retention deleted."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "kafka-replay-log-start",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0]
            for p in partitions
        }
    finally:
        consumer.close()
