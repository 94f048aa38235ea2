"""A service that keeps results in memory and writes them every two seconds, while the
consumer's automatic commit (every second) commits what it has read: a crash loses the
buffered results of records already committed. Written from the app contract alone
(docs/incidents.md): ``python -m tests.apps.buffering``.
"""

from __future__ import annotations

import json
import os
import signal
import time

from confluent_kafka import Consumer, Producer

WRITE_EVERY_S = 2.0


def main() -> None:
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    imposed = json.loads(os.environ.get("REPLAY_CLIENT_CONFIG") or "{}")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": os.environ["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            **imposed,
            "enable.auto.commit": True,  # the defect: commits what is only in memory
            "auto.commit.interval.ms": 1000,
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    consumer.subscribe([os.environ["REPLAY_INPUT_TOPIC"]])
    output = os.environ["REPLAY_OUTPUT_TOPIC"]
    pending, written = [], time.monotonic()
    while not stopping:
        pending += [m for m in consumer.consume(100, timeout=0.2) if m.error() is None]
        if pending and time.monotonic() - written >= WRITE_EVERY_S:
            for message in pending:
                producer.produce(output, message.value(), message.key(), headers=message.headers())
            producer.flush(30)
            pending, written = [], time.monotonic()
    for message in pending:  # a clean stop writes what it holds
        producer.produce(output, message.value(), message.key(), headers=message.headers())
    producer.flush(30)
    consumer.close()


if __name__ == "__main__":
    main()
