"""Consume-transform-produce test apps that break a guarantee on purpose.

``python -m tests.apps.faulty MODE`` with MODE:

- ``duplicate``: at-least-once, but every fifth record is written twice;
- ``lose``: commits each batch before writing it and drops every fifth record.

The correct exactly-once counterpart is the reference app
``kafka_replay_incidents.apps.eos_processor``.
"""

from __future__ import annotations

import signal
import sys

from confluent_kafka import Consumer, Producer

from kafka_replay.apps.contract import AppContext
from kafka_replay_incidents.apps.common import next_offsets


def main(mode: str) -> int:
    context = AppContext.from_env()
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = Consumer(
        {
            "bootstrap.servers": context.bootstrap_servers,
            "group.id": context.group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **context.client_config,
        }
    )
    producer = Producer({"bootstrap.servers": context.bootstrap_servers, "linger.ms": 5})
    consumer.subscribe([context.input_topic])
    seen = 0
    while not stopping:
        batch = [m for m in consumer.consume(50, timeout=0.5) if m.error() is None]
        if not batch:
            continue
        if mode == "lose":
            consumer.commit(offsets=next_offsets(batch), asynchronous=False)
        for message in batch:
            seen += 1
            copies = 2 if mode == "duplicate" and seen % 5 == 0 else 1
            if mode == "lose" and seen % 5 == 0:
                copies = 0
            for _ in range(copies):
                producer.produce(
                    context.output_topic, message.value(), message.key(), headers=message.headers()
                )
        producer.flush(30)
        if mode == "duplicate":
            consumer.commit(offsets=next_offsets(batch), asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
