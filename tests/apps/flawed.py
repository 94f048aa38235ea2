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
  buffered results of records already committed.

``kafka-replay explore`` finds each (``./dev bench explore``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, Message, Producer

MODES = ("commit-first", "retrying", "latest-start", "buffering")
WRITE_EVERY_S = 2.0


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
        {"bootstrap.servers": bootstrap, "enable.idempotence": mode != "retrying", "acks": "all",
         "retries": 10, "linger.ms": 5}
    )  # fmt: skip
    consumer.subscribe([os.environ["REPLAY_INPUT_TOPIC"]])
    output = os.environ["REPLAY_OUTPUT_TOPIC"]

    def write(messages: list[Message]) -> None:
        for message in messages:
            if mode == "commit-first":
                time.sleep(0.002)  # the per-record work, after the commit
            producer.produce(output, message.value(), message.key(), headers=message.headers())
        producer.flush(30)

    pending: list[Message] = []
    written = time.monotonic()
    while not stopping:
        batch = [m for m in consumer.consume(100, timeout=0.2) if m.error() is None]
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
