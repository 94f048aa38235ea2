"""A receipt service that joins two topics, as a team writes it from the documented contract
alone (no harness import): orders and payments, both keyed by order id.

``python tests/apps/join.py``

It keeps what it has seen of each order id; once an order and its payment are both in, it
writes a receipt carrying the order's ``event_id`` header to the output topic. A payment gives
no record of its own.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from confluent_kafka import Consumer, Producer


def main() -> int:
    env = os.environ
    bootstrap = env["KAFKA_BOOTSTRAP_SERVERS"]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": env["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **json.loads(env.get("REPLAY_CLIENT_CONFIG") or "{}"),
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    orders_topic, payments_topic = env["REPLAY_TOPIC_ORDERS"], env["REPLAY_TOPIC_PAYMENTS"]
    orders: dict[str, tuple[dict, list]] = {}
    paid: set[str] = set()
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer.subscribe([orders_topic, payments_topic])
    while not stopping:
        records = [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
        for message in records:
            document = json.loads(message.value())
            order_id = document["order_id"]
            if message.topic() == orders_topic:
                ids = [h for h in message.headers() or [] if h[0] == "event_id"]
                orders[order_id] = (document, ids)
            else:
                paid.add(order_id)
            if order_id in orders and order_id in paid:
                order, ids = orders.pop(order_id)
                paid.discard(order_id)
                receipt = {"order": order_id, "amount": order["amount"], "paid": True}
                producer.produce(
                    env["REPLAY_OUTPUT_TOPIC"], json.dumps(receipt).encode(), order_id.encode(),
                    headers=ids,
                )  # fmt: skip
        if records:
            producer.flush(30)
            consumer.commit(asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
