"""An order service as a team writes it: it accepts only its own order schema.

Written from the documented app contract alone (no harness import). Each order must match
``docs/examples/order.avsc`` / ``order.schema.json``; anything else (the harness's own JSON,
say) is a poison message: the service stops with an error, as a strict consumer does. It
charges each order (``--work-ms``) and writes a charge to the output topic *without headers*:
the charge carries the order's ``order_id``, which is all the checker can follow.

``python tests/apps/orders.py --format json|avro|avro-registry [--work-ms MS]
[--commit-every-s S [--only-assigned]]``

- By default it works in batches of ``REPLAY_MAX_POLL_RECORDS`` and commits each batch's
  offsets after it (a commit refused because the member was kicked out is logged, as a Java
  service logs a ``CommitFailedException``, and not sent again: the group rereads the batch).
- ``--commit-every-s`` keeps a map of processed offsets and commits it on a timer; without
  ``--only-assigned`` it commits partitions it no longer owns (a zombie commit).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import fastavro
import jsonschema
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "examples"  # the docs' order schema


class Rejected(ValueError):
    """A message that is not one of our orders."""


def json_reader() -> Any:
    validator = jsonschema.Draft202012Validator(
        json.loads((SCHEMAS / "order.schema.json").read_text()),
        format_checker=jsonschema.FormatChecker(),
    )

    def read(value: bytes, topic: str) -> dict[str, Any]:
        try:
            order = json.loads(value)
            validator.validate(order)
        except (ValueError, jsonschema.ValidationError) as exc:
            raise Rejected(f"not an order: {exc}") from exc
        return order

    return read


def avro_reader() -> Any:
    schema = fastavro.parse_schema(json.loads((SCHEMAS / "order.avsc").read_text()))

    def read(value: bytes, topic: str) -> dict[str, Any]:
        try:
            order = fastavro.schemaless_reader(io.BytesIO(value), schema, schema)
        except Exception as exc:  # fastavro raises many kinds on foreign bytes
            raise Rejected(f"not an Avro order: {exc}") from exc
        if not isinstance(order, dict) or not str(order.get("currency", "")).isalpha():
            raise Rejected("not an Avro order")
        return order

    return read


def registry_reader() -> Any:
    """The stock deserializer, schemas from the registry the run gives us."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": os.environ["REPLAY_SCHEMA_REGISTRY_URL"]})
    deserialize = AvroDeserializer(client)

    def read(value: bytes, topic: str) -> dict[str, Any]:
        try:
            order = deserialize(value, SerializationContext(topic, MessageField.VALUE))
        except Exception as exc:  # the stock deserializer's own errors
            raise Rejected(f"not a registered Avro order: {exc}") from exc
        if not isinstance(order, dict) or "order_id" not in order:
            raise Rejected("not an order")
        return order

    return read


READERS = {"json": json_reader, "avro": avro_reader, "avro-registry": registry_reader}


def charge(order: dict[str, Any], work_ms: float) -> bytes:
    time.sleep(work_ms / 1000)  # the per-order work: a call to the payment provider
    charged = {"order_id": str(order["order_id"]), "charged": order["amount"]}
    return json.dumps({**charged, "currency": order["currency"]}).encode()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="orders")
    parser.add_argument("--format", choices=READERS, default="json")
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--commit-every-s", type=float, default=0.0)
    parser.add_argument("--only-assigned", action="store_true")
    options = parser.parse_args(argv)
    env = os.environ
    read = READERS[options.format]()
    consumer = Consumer(
        {
            "bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"],
            "group.id": env["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **json.loads(env.get("REPLAY_CLIENT_CONFIG") or "{}"),
        }
    )
    producer = Producer({"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "acks": "all"})
    output = env["REPLAY_OUTPUT_TOPIC"]
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    done: dict[tuple[str, int], int] = {}

    def commit(partitions: list[TopicPartition] | None = None) -> None:
        keys = set(done)
        if partitions is not None:
            keys &= {(p.topic, p.partition) for p in partitions}
        if options.only_assigned:
            keys &= {(p.topic, p.partition) for p in consumer.assignment()}
        offsets = [TopicPartition(t, p, done[(t, p)]) for t, p in sorted(keys)]
        if not offsets:
            return
        producer.flush(30)
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            print(f"commit failed: {exc}", file=sys.stderr, flush=True)

    def on_revoke(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if options.only_assigned:
            commit(partitions)
            for p in partitions:
                done.pop((p.topic, p.partition), None)

    consumer.subscribe([env["REPLAY_INPUT_TOPIC"]], on_revoke=on_revoke)
    batch = int(env.get("REPLAY_MAX_POLL_RECORDS") or 500) if not options.commit_every_s else 50
    next_flush = time.monotonic() + options.commit_every_s
    while not stopping:
        messages = [m for m in consumer.consume(batch, timeout=0.1) if m.error() is None]
        for message in messages:
            try:
                order = read(message.value(), message.topic())
            except Rejected as exc:
                print(f"rejected {message.topic()}/{message.partition()}@{message.offset()}: "
                      f"{exc}", file=sys.stderr, flush=True)  # fmt: skip
                return 1
            producer.produce(output, charge(order, options.work_ms), message.key())
            done[(message.topic(), message.partition())] = message.offset() + 1
        if not options.commit_every_s:
            if messages:  # only this batch's: a batch whose commit was refused is read again
                commit()
                done.clear()
        elif time.monotonic() >= next_flush:
            commit()
            next_flush = time.monotonic() + options.commit_every_s
    commit()
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
