"""Consume-transform-produce test apps with a known delivery behaviour.

``python -m tests.apps.faulty MODE`` with MODE:

- ``duplicate``: at-least-once, but every fifth record is written twice;
- ``lose``: commits each batch before writing it and drops every fifth record;
- ``transactional``: exactly-once, output and offsets committed in one transaction.
"""

from __future__ import annotations

import signal
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

from harness.apps.contract import AppContext


def _next_offsets(batch) -> list[TopicPartition]:
    last: dict[tuple[str, int], int] = {}
    for message in batch:
        last[(message.topic(), message.partition())] = message.offset() + 1
    return [TopicPartition(t, p, o) for (t, p), o in last.items()]


def main(mode: str) -> int:
    context = AppContext.from_env()
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    transactional = mode == "transactional"
    consumer = Consumer(
        {
            "bootstrap.servers": context.bootstrap_servers,
            "group.id": context.group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            **context.client_config,
        }
    )
    producer_config = {"bootstrap.servers": context.bootstrap_servers, "linger.ms": 5}
    if transactional:
        producer_config["transactional.id"] = context.transactional_id
    producer = Producer(producer_config)
    if transactional:
        producer.init_transactions(30)
    consumer.subscribe([context.input_topic])
    seen = 0
    while not stopping:
        batch = [m for m in consumer.consume(50, timeout=0.5) if m.error() is None]
        if not batch:
            continue
        if transactional:
            producer.begin_transaction()
        if mode == "lose":
            consumer.commit(offsets=_next_offsets(batch), asynchronous=False)
        for message in batch:
            seen += 1
            copies = 2 if mode == "duplicate" and seen % 5 == 0 else 1
            if mode == "lose" and seen % 5 == 0:
                copies = 0
            for _ in range(copies):
                producer.produce(
                    context.output_topic, message.value(), message.key(), headers=message.headers()
                )
        if transactional:
            producer.send_offsets_to_transaction(
                _next_offsets(batch), consumer.consumer_group_metadata(), 30
            )
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            if mode == "duplicate":
                consumer.commit(offsets=_next_offsets(batch), asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
