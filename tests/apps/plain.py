"""A Python app written only against the documented contract: no ``Reporter``, no harness import.

``python tests/apps/plain.py [--commit-first] [--crash-every N]``

It polls a batch (``REPLAY_MAX_POLL_RECORDS``, else 500), copies each record to the output
and commits. ``--crash-every N`` makes it die on its own in the middle of every Nth batch:
after writing and before committing (so records come out twice), or with ``--commit-first``
after committing and before writing (so records are lost).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="plain")
    parser.add_argument("--commit-first", action="store_true")
    parser.add_argument("--crash-every", type=int, default=0)
    options = parser.parse_args(argv)
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
    batch_size = int(env.get("REPLAY_MAX_POLL_RECORDS") or 500)
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer.subscribe([env["REPLAY_INPUT_TOPIC"]])
    batches = 0
    while not stopping:
        records = [m for m in consumer.consume(batch_size, timeout=0.5) if m.error() is None]
        if not records:
            continue
        batches += 1
        crash = options.crash_every and batches % options.crash_every == 0
        offsets = {(m.topic(), m.partition()): m.offset() + 1 for m in records}
        commit = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        if options.commit_first:
            consumer.commit(offsets=commit, asynchronous=False)
            if crash:
                os._exit(1)
        for message in records:
            producer.produce(env["REPLAY_OUTPUT_TOPIC"], message.value(), message.key())
        producer.flush(30)
        if crash:
            os._exit(1)
        if not options.commit_first:
            consumer.commit(offsets=commit, asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
