"""Forwarders with a defect only a fault shows, as teams write them from the app contract alone
(docs/incidents.md): ``python -m tests.apps.flawed MODE``, with MODE:

- ``commit-first``: commits each batch before it writes the batch's results, so a kill between
  the two loses them;
- ``retrying``: its producer retries without idempotence, so a send whose answer is lost after
  the broker appended it is written twice (it commits only what it wrote: at-least-once, not
  exactly-once);
- ``latest-start``: starts a partition without a committed offset at its end
  (``auto.offset.reset = latest``), so what was written to a partition added while it ran,
  before it learnt of the partition, it never reads;
- ``buffering``: keeps results in memory and writes them every two seconds while the
  consumer's automatic commit (every second) commits what it has read, so a crash loses the
  buffered results of records already committed;
- ``fire-and-forget``: gives each send 2 s (``message.timeout.ms``) and never reads its
  delivery reports, then commits, so a send answered late is lost;
- ``drop-on-revoke``: works through what it read twenty records at a time (10 ms each), and when its
  partitions are revoked drops what it has not written yet and commits what it read, so the
  next owner starts after records nobody wrote;
- ``acks-one``: its producer waits for the leader alone (``acks = 1``, no idempotence), so a
  leader that dies before its followers copied a write loses it.

``kafka-replay explore`` finds each (``./dev bench explore``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

MODES = (
    "commit-first", "retrying", "latest-start", "buffering", "fire-and-forget", "drop-on-revoke",
    "acks-one",
)  # fmt: skip
WRITE_EVERY_S = 2.0
#: How many records ``drop-on-revoke`` writes between two reads, each after its work.
SLICE = 20
WORK_S = 0.01


def main(mode: str) -> int:
    if mode not in MODES:
        print(f"usage: python -m tests.apps.flawed {{{','.join(MODES)}}}", file=sys.stderr)
        return 2
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": os.environ["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            **json.loads(os.environ.get("REPLAY_CLIENT_CONFIG") or "{}"),
            "enable.auto.commit": mode == "buffering",
            "auto.commit.interval.ms": 1000,
            **({"auto.offset.reset": "latest"} if mode == "latest-start" else {}),
        }
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "retries": 10, "linger.ms": 5,
         "enable.idempotence": mode not in ("retrying", "acks-one"),
         "acks": 1 if mode == "acks-one" else "all",
         **({"message.timeout.ms": 2000} if mode == "fire-and-forget" else {})}
    )  # fmt: skip
    pending: list[Message] = []

    def revoked(consumer: Consumer, partitions: list) -> None:
        if mode == "drop-on-revoke":  # "the next owner need not read them again"
            pending.clear()
            with contextlib.suppress(KafkaException):  # nothing read since the last commit
                consumer.commit(asynchronous=False)

    consumer.subscribe([os.environ["REPLAY_INPUT_TOPIC"]], on_revoke=revoked)
    output = os.environ["REPLAY_OUTPUT_TOPIC"]

    def write(messages: list[Message]) -> None:
        for message in messages:
            if mode == "commit-first":
                time.sleep(0.002)  # the per-record work, after the commit
            producer.produce(output, message.value(), message.key(), headers=message.headers())
        producer.flush(30)

    written = time.monotonic()
    while not stopping:
        batch = [m for m in consumer.consume(100, timeout=0.2) if m.error() is None]
        if mode == "drop-on-revoke":
            pending += batch
            done, pending[:] = pending[:SLICE], pending[SLICE:]
            time.sleep(WORK_S * len(done))  # the per-record work
            write(done)
            if done:
                consumer.commit(offsets=_after(done), asynchronous=False)
            continue
        if mode == "buffering":
            pending += batch
            if pending and time.monotonic() - written >= WRITE_EVERY_S:
                write(pending)
                pending, written = [], time.monotonic()
            continue
        if not batch:
            continue
        if mode == "commit-first":
            consumer.commit(asynchronous=False)
        write(batch)
        if mode != "commit-first":
            consumer.commit(asynchronous=False)
    write(pending)  # a clean stop writes what it holds
    consumer.close()
    return 0


def _after(messages: list[Message]) -> list[TopicPartition]:
    """The offsets to commit once ``messages`` are written: after the last of each partition."""
    last = {(m.topic(), m.partition()): m.offset() for m in messages}
    return [TopicPartition(t, p, offset + 1) for (t, p), offset in last.items()]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
