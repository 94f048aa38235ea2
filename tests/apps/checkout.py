"""A checkout service as a team writes it, from the documented contract alone (no harness
import): it reads orders (``REPLAY_INPUT_TOPIC``), writes a confirmation per order
(``REPLAY_OUTPUT_TOPIC``), and commits after each batch.

``python tests/apps/checkout.py --on-bad crash|skip|dead-letter [--dead-letter-every N]``

An order that is not JSON is a poison pill:

- ``crash``: the parse error ends the process (restarted, it meets the same record again);
- ``skip``: logged and dropped, the offset committed past it (silent loss);
- ``dead-letter``: written as it came, headers and all, to the dead-letter topic the incident
  names ``orders-dlq`` (``REPLAY_TOPIC_ORDERS_DLQ``), and the service goes on.

``--dead-letter-every N`` also dead-letters every Nth good order: a bug that misroutes them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from confluent_kafka import Consumer, Producer


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="checkout")
    parser.add_argument("--on-bad", choices=("crash", "skip", "dead-letter"), required=True)
    parser.add_argument("--dead-letter-every", type=int, default=0)
    options = parser.parse_args(argv)
    env = os.environ
    consumer = Consumer(
        {
            "bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"],
            "group.id": env["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **json.loads(env.get("REPLAY_CLIENT_CONFIG") or "{}"),
        }
    )
    producer = Producer(
        {"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "enable.idempotence": True}
    )
    confirmations = env["REPLAY_OUTPUT_TOPIC"]
    dead_letters = env.get("REPLAY_TOPIC_ORDERS_DLQ")
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer.subscribe([env["REPLAY_INPUT_TOPIC"]])
    good = 0
    while not stopping:
        records = [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
        for message in records:
            try:
                order = json.loads(message.value())
            except ValueError as exc:
                if options.on_bad == "crash":
                    raise SystemExit(
                        f"cannot parse order at offset {message.offset()}: {exc}"
                    ) from exc
                if options.on_bad == "dead-letter":
                    producer.produce(
                        dead_letters, message.value(), message.key(), headers=message.headers()
                    )
                else:
                    print(f"skipping a bad order at offset {message.offset()}", file=sys.stderr)
                continue
            good += 1
            if options.dead_letter_every and good % options.dead_letter_every == 0:
                producer.produce(
                    dead_letters, message.value(), message.key(), headers=message.headers()
                )
                continue
            confirmation = {"order": order.get("order_id"), "status": "confirmed"}
            producer.produce(
                confirmations,
                json.dumps(confirmation).encode(),
                message.key(),
                headers=[h for h in message.headers() or [] if h[0] == "event_id"],
            )
        if records:
            producer.flush(30)
            consumer.commit(asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
