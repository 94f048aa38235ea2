"""A consume-transform-produce service with a defect only a crash shows: it commits each batch
before it writes the batch's results, so a kill between the two loses them.

Written from the app contract alone (docs/incidents.md): ``python -m tests.apps.commit_first``.
"""

from __future__ import annotations

import json
import os
import signal
import time

from confluent_kafka import Consumer, Producer


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
            "enable.auto.commit": False,
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    consumer.subscribe([os.environ["REPLAY_INPUT_TOPIC"]])
    output = os.environ["REPLAY_OUTPUT_TOPIC"]
    while not stopping:
        batch = [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
        if not batch:
            continue
        consumer.commit(asynchronous=False)  # the defect: done before the results are written
        for message in batch:
            time.sleep(0.002)  # the per-record work
            producer.produce(output, message.value(), message.key(), headers=message.headers())
        producer.flush(30)
    consumer.close()


if __name__ == "__main__":
    main()
