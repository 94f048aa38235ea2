"""A forwarder whose producer retries without idempotence: a send whose answer is lost after
the broker appended it is written again. Written from the app contract alone
(docs/incidents.md): ``python -m tests.apps.retrying_forwarder``. It commits only what it has
written, so it keeps at-least-once; exactly-once it does not.
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
            "auto.offset.reset": "earliest",
            **imposed,
            "enable.auto.commit": False,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": False,
            "acks": "all",
            "retries": 10,
            "linger.ms": 5,
        }
    )
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
