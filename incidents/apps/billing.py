"""The post's billing service: one charge in PostgreSQL per student onboarding event.

``python -m kafka_replay_incidents.apps.billing [--mode MODE] [--batch N] [--work-ms MS]``

The database is the contract's ``REPLAY_DATABASE_URL`` (its tables made by the incident); the
batch is ``REPLAY_MAX_POLL_RECORDS``, else ``--batch``. ``--work-ms`` is each record's work.

- ``insert-then-commit`` (the post's code): insert each event's charge as it is worked on
  (each insert its own transaction, as most data layers do), commit the offsets after the
  batch. A crash in the middle of a batch, or a rebalance, charges its first events again.
- ``offsets-in-db``: the charges and the partitions' next offsets (``consumer_positions``)
  commit in one database transaction; an assigned partition starts where the table says.
  Kafka's commit afterwards only tells lag monitors.
- ``upsert``: as the first, but ``ON CONFLICT (event_id) DO NOTHING`` makes a second charge
  for an event a no-op (at-least-once delivery, an exactly-once effect).

A database error ends the process; the supervisor restarts it as a deployment would.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import psycopg
from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from .common import Service, next_offsets

MODES = ("insert-then-commit", "offsets-in-db", "upsert")
#: The fee by event type, in cents; any other type costs DEFAULT_FEE.
FEES = {"account.created": 1500}
DEFAULT_FEE = 500

INSERT = "INSERT INTO charges (event_id, student, amount_cents) VALUES (%s, %s, %s)"
UPSERT = INSERT + " ON CONFLICT (event_id) DO NOTHING"
POSITIONS = (
    "SELECT kafka_partition, next_offset FROM consumer_positions "
    "WHERE consumer_group = %s AND topic = %s"
)
#: A partition's row, made at the batch's first offset when there is none yet, then locked:
#: a second instance (one the group has replaced) waits here, then skips what was charged.
CLAIM = (
    "INSERT INTO consumer_positions (consumer_group, topic, kafka_partition, next_offset) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
LOCK = (
    "SELECT next_offset FROM consumer_positions "
    "WHERE consumer_group = %s AND topic = %s AND kafka_partition = %s FOR UPDATE"
)
ADVANCE = (
    "UPDATE consumer_positions SET next_offset = %s "
    "WHERE consumer_group = %s AND topic = %s AND kafka_partition = %s"
)


def charge_of(message: Message) -> tuple[str, str, int]:
    """``(event_id, student, amount_cents)``: the header's event id, else the value's."""
    document = json.loads(message.value())
    headers = dict(message.headers() or [])
    header = headers.get("event_id")
    event_id = header.decode() if header else document["event_id"]
    key = message.key()
    student = key.decode() if key is not None else document["key"]
    return event_id, student, FEES.get(document.get("type"), DEFAULT_FEE)


class Billing:
    """Writes a batch's charges in one database transaction, as ``mode`` says."""

    def __init__(self, service: Service, database: psycopg.Connection[Any], mode: str) -> None:
        self.service = service
        self.database = database
        self.mode = mode

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Start each partition at its stored position (none: the group's offset, or earliest)."""
        stored: dict[tuple[str, int], int] = {}
        for topic in {p.topic for p in partitions}:
            rows = self.database.execute(POSITIONS, (self.service.context.group_id, topic))
            stored.update({(topic, partition): offset for partition, offset in rows})
        for p in partitions:
            p.offset = stored.get((p.topic, p.partition), p.offset)
        try:
            consumer.assign(partitions)
        except KafkaException:  # a cooperative protocol takes its changes one by one
            consumer.incremental_assign(partitions)

    def charge(self, batch: list[Message], work_ms: float) -> None:
        """Insert the batch's charges: each on its own (the connection autocommits), or, in
        ``offsets-in-db``, all of them and the positions in one transaction."""
        if self.mode != "offsets-in-db":
            statement = UPSERT if self.mode == "upsert" else INSERT
            for message in batch:
                time.sleep(work_ms / 1000)  # the record's work
                self.database.execute(statement, charge_of(message))
            return
        with self.database.transaction():  # BEGIN ... COMMIT
            batch = self._unclaimed(batch)
            for message in batch:
                time.sleep(work_ms / 1000)
                self.database.execute(INSERT, charge_of(message))
            group = self.service.context.group_id
            for p in next_offsets(batch):
                self.database.execute(ADVANCE, (p.offset, group, p.topic, p.partition))

    def _unclaimed(self, batch: list[Message]) -> list[Message]:
        """Lock the batch's partitions' rows; drop records another instance already charged."""
        group = self.service.context.group_id
        first: dict[tuple[str, int], int] = {}
        for m in batch:
            first.setdefault((m.topic(), m.partition()), m.offset())
        start: dict[tuple[str, int], int] = {}
        for (topic, partition), offset in sorted(first.items()):
            self.database.execute(CLAIM, (group, topic, partition, offset))
            row = self.database.execute(LOCK, (group, topic, partition)).fetchone()
            start[(topic, partition)] = row[0] if row else offset
        return [m for m in batch if m.offset() >= start[(m.topic(), m.partition())]]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="billing")
    parser.add_argument("--mode", choices=MODES, default=MODES[0])
    parser.add_argument("--batch", type=int, default=500, help="unless the incident sets one")
    parser.add_argument("--work-ms", type=float, default=0.0)
    options = parser.parse_args(argv)
    service = Service()
    if not service.context.database_url:
        print("billing: REPLAY_DATABASE_URL is not set: this run has no database", file=sys.stderr)
        return 2
    batch_size = service.context.max_poll_records or options.batch
    with psycopg.connect(service.context.database_url, autocommit=True) as database:
        billing = Billing(service, database, options.mode)
        consumer = service.consumer()
        on_assign = billing.on_assign if options.mode == "offsets-in-db" else None
        callbacks = service.report.rebalance_callbacks(on_assign=on_assign)
        consumer.subscribe([service.context.input_topic], **callbacks)
        while not service.stopping:
            batch = service.poll(consumer, batch_size, timeout=0.5)
            if not batch:
                continue
            billing.charge(batch, options.work_ms)
            service.commit(consumer, next_offsets(batch))  # a refusal shows at the next poll
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
