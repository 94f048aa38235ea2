"""Waiting for a compacted topic's cleaner: until the tombstones written so far are gone.

A consumer that is away longer than a compacted topic keeps its tombstones
(``delete.retention.ms``) never sees those deletes: the cleaner removes a deleted key's
earlier values as soon as it cleans past the tombstone, and the tombstone itself that long
after. The step reads the topic from its start, as such a consumer would, and compares what
the log still holds with what the workloads had acknowledged, so the wait ends when the
cleaner has done it, not after a guess at how long it takes.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from kafka_replay.definitions.model import Step
from kafka_replay.definitions.vocabulary import Field, step_kind
from kafka_replay.waiting import poll
from kafka_replay.workload import EVENT_ID_HEADER
from kafka_replay.workload.producer import CLIENT_LOG

from .stage import Stage, StepFailed

#: How long one read of the log waits for a fetch before asking for the partitions' ends again.
_READ_TIMEOUT_S = 10.0


def log_reader(bootstrap_servers: str) -> Consumer:
    """A consumer that reads logs from their start for :func:`logged_ids` (it joins no group)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "kafka-replay-compaction-watch",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
            "logger": CLIENT_LOG,
        }
    )


def logged_ids(consumer: Consumer, topic: str) -> set[str] | None:
    """The ``event_id`` header of every record a topic's log holds now, read from its start
    with ``consumer`` (None: it could not be read in time, as on a loaded machine; the caller
    asks again)."""
    try:
        partitions = consumer.list_topics(topic, timeout=_READ_TIMEOUT_S).topics[topic].partitions
        ends = {}
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=_READ_TIMEOUT_S
            )
            if high > low:
                ends[partition] = high
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        found: set[str] = set()

        def read_on() -> bool:
            """A batch more read; whether every partition was read to its end."""
            nonlocal ends
            for message in consumer.consume(500, timeout=0.5) if ends else ():
                headers = dict(message.headers() or []) if message.error() is None else {}
                if EVENT_ID_HEADER in headers:
                    found.add(headers[EVENT_ID_HEADER].decode())
            # by position, not by the last record seen: the cleaner leaves gaps in the offsets
            at = consumer.position([TopicPartition(topic, p) for p in ends]) if ends else []
            ends = {tp.partition: ends[tp.partition] for tp in at if tp.offset < ends[tp.partition]}
            return not ends

        poll(read_on, _READ_TIMEOUT_S, every_s=0)
        return None if ends else found
    except KafkaException:
        return None
    finally:
        consumer.unassign()  # what it fetched is dropped: the next read starts afresh


@step_kind(
    "wait_compaction",
    needs="compaction",
    topic=Field(str, "input"),
    budget_s=Field((int, float)),
    label=Field(str, None),
)
def _wait_compaction(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until the cleaner has removed every tombstone acknowledged before the step began
    (reading the topic from its start), up to ``budget_s``; records how many it removed, of
    the tombstones and of every acknowledged record, and whether that happened within the
    budget (a profile that keeps its tombstones longer waits the whole budget and says so)."""
    topic = stage.topics[step["topic"]]
    tombstones = {e["event_id"] for e in _acks(stage, topic) if e.get("delete")}
    if not tombstones:
        raise StepFailed(
            f"no tombstone of topic {topic} was acknowledged before this step: it waits for the "
            "cleaner to remove the deletes written earlier (a workload with deletes, produced "
            "before it)"
        )
    started = time.monotonic()
    left: dict[str, int] = {}
    reader = log_reader(stage.cluster.bootstrap_servers)  # one for every look at the log

    def removed() -> bool:
        acked = {e["event_id"] for e in _acks(stage, topic)}  # before the log: each is in it
        held = logged_ids(reader, topic)
        if held is None:
            return False
        left["tombstones"] = len(tombstones & held)
        left["records_removed"] = len(acked - held)
        return left["tombstones"] == 0

    try:
        reached = stage.until(removed, step["budget_s"])
    finally:
        reader.close()
    return {
        "topic": topic,
        "tombstones": len(tombstones),
        "tombstones_removed": len(tombstones) - left.get("tombstones", len(tombstones)),
        "records_removed": left.get("records_removed", 0),
        "within_budget": reached,
        "waited_s": round(time.monotonic() - started, 2),
    }


def _acks(stage: Stage, topic: str) -> list[dict[str, Any]]:
    """The workloads' acknowledgements of ``topic``'s records so far."""
    return [
        e for e in stage.history.read("produce") if e.get("kind") == "ack" and e["topic"] == topic
    ]
