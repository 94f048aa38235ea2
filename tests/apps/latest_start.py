"""A forwarder that starts a partition without a committed offset at its end
(``auto.offset.reset = latest``): whatever was written to a partition added while it ran,
before it learnt of the partition, it never reads. Written from the app contract alone
(docs/incidents.md): ``python -m tests.apps.latest_start``.
"""

from __future__ import annotations

import json
import os
import signal

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
            **imposed,
            "auto.offset.reset": "latest",  # the defect
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
        for message in batch:
            producer.produce(output, message.value(), message.key(), headers=message.headers())
        producer.flush(30)
        consumer.commit(asynchronous=False)
    consumer.close()


if __name__ == "__main__":
    main()
