"""A test app that echoes each input to the output with what the contract told it.

Run as a callable (``tests.apps.echo:run``) it reads the environment; run as a command
(``python -m tests.apps.echo --bootstrap {bootstrap} ...``) it also reports its arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_replay.apps.contract import AppContext
from kafka_replay.apps.instrument import Reporter


def run(context: AppContext, argv: dict[str, str] | None = None) -> int:
    report = Reporter.from_env()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = Consumer(
        report.client_config(
            {
                "bootstrap.servers": context.bootstrap_servers,
                "group.id": context.group_id,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **context.client_config,
            }
        )
    )
    producer = Producer({"bootstrap.servers": context.bootstrap_servers})
    consumer.subscribe([context.input_topic], **report.rebalance_callbacks())
    seen = {
        "env": {k: v for k, v in os.environ.items() if k.startswith(("REPLAY_", "KAFKA_BOOT"))},
        "argv": argv,
        "context_instance": context.instance,
    }
    while not stopping:
        batch = [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
        for message in batch:
            event_id = json.loads(message.value())["event_id"]
            producer.produce(
                context.output_topic,
                json.dumps({"event_id": event_id, "seen": seen}),
                message.key(),
                headers=[("event_id", event_id.encode())],
            )
        producer.flush(30)
        if batch:
            last: dict[tuple[str, int], int] = {}
            for message in batch:
                last[(message.topic(), message.partition())] = message.offset() + 1
            report.commit(consumer, offsets=[TopicPartition(t, p, o) for (t, p), o in last.items()])
    consumer.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "input", "output", "group", "instance"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args()
    context = AppContext(args.bootstrap, args.input, args.output, args.group,
                         json.loads(os.environ.get("REPLAY_CLIENT_CONFIG", "{}")),
                         int(args.instance))  # fmt: skip
    return run(context, argv=vars(args))


if __name__ == "__main__":
    sys.exit(main())
