"""A billing service that gives two results per order, as a team writes it from the documented
contract alone (no harness import): a charge and a notification.

``python tests/apps/fan_out.py --by topics|kind [--transactional] [--work-ms MS]``

- ``--by topics``: the charge goes to the topic the incident names ``charges``, the
  notification to ``notifications`` (``REPLAY_TOPIC_CHARGES``, ``REPLAY_TOPIC_NOTIFICATIONS``);
- ``--by kind``: both go to ``events``, told apart by their ``kind`` field.

Without ``--transactional`` it writes a batch, flushes, then commits: killed in between, the
batch is written again on restart. With it, the results and the consumed offsets commit in one
transaction, and it reads with read_committed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fan_out")
    parser.add_argument("--by", choices=("topics", "kind"), required=True)
    parser.add_argument("--transactional", action="store_true")
    parser.add_argument("--work-ms", type=float, default=0.0)
    options = parser.parse_args(argv)
    env = os.environ
    bootstrap = env["KAFKA_BOOTSTRAP_SERVERS"]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": env["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            **json.loads(env.get("REPLAY_CLIENT_CONFIG") or "{}"),
        }
    )
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True}
    if options.transactional:
        config["transactional.id"] = env["REPLAY_TRANSACTIONAL_ID"]
    producer = Producer(config)
    if options.transactional:
        producer.init_transactions(60)
    if options.by == "topics":
        targets = {"charge": env["REPLAY_TOPIC_CHARGES"],
                   "notification": env["REPLAY_TOPIC_NOTIFICATIONS"]}  # fmt: skip
    else:
        targets = {"charge": env["REPLAY_TOPIC_EVENTS"], "notification": env["REPLAY_TOPIC_EVENTS"]}
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer.subscribe([env["REPLAY_INPUT_TOPIC"]])
    while not stopping:
        records = [m for m in consumer.consume(50, timeout=0.2) if m.error() is None]
        if not records:
            continue
        if options.transactional:
            producer.begin_transaction()
        for message in records:
            time.sleep(options.work_ms / 1000)
            order = json.loads(message.value())
            ids = [h for h in message.headers() or [] if h[0] == "event_id"]
            for kind, topic in targets.items():
                result = {"kind": kind, "order": order.get("order_id"), "amount": order["amount"]}
                producer.produce(topic, json.dumps(result).encode(), message.key(), headers=ids)
        ends = {(m.topic(), m.partition()): m.offset() + 1 for m in records}
        offsets = [TopicPartition(t, p, o) for (t, p), o in ends.items()]
        if options.transactional:
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            consumer.commit(offsets=offsets, asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
