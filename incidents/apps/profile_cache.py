"""A profile service's table, kept from a compacted topic: a row per profile, as the topic says.

``python -m kafka_replay_incidents.apps.profile_cache [--batch N]``

Each record of the input topic is a profile's latest state (its key the profile id) or, with
no value, its delete (a tombstone). Each poll's batch is applied in one database transaction
(an upsert per value, a delete per tombstone), then its offsets are committed: a replay after
a crash applies the same states again, which changes nothing. The table is the contract's
``REPLAY_DATABASE_URL``'s ``profiles``, made by the incident; the batch is
``REPLAY_MAX_POLL_RECORDS``, else ``--batch``.

The service applies a delete only when it reads the tombstone. Stopped for longer than the
topic keeps tombstones (``delete.retention.ms``), it comes back to a log the cleaner has
compacted: the deleted profile's tombstone and its earlier values are gone, and its row stays.
A database error ends the process; the supervisor restarts it as a deployment would.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import psycopg
from confluent_kafka import Message

from .common import Service, next_offsets

UPSERT = (
    "INSERT INTO profiles (profile_id, event_id, email, plan) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (profile_id) DO UPDATE SET event_id = EXCLUDED.event_id, "
    "email = EXCLUDED.email, plan = EXCLUDED.plan, updated_at = clock_timestamp()"
)
DELETE = "DELETE FROM profiles WHERE profile_id = %s"


def apply(database: psycopg.Connection[Any], batch: list[Message]) -> None:
    """The batch's states and deletes, in offset order, in one transaction."""
    with database.transaction():
        for message in batch:
            profile_id = (message.key() or b"").decode()
            value = message.value()
            if value is None:  # a tombstone: the profile was deleted
                database.execute(DELETE, (profile_id,))
                continue
            document = json.loads(value)
            header = dict(message.headers() or []).get("event_id")
            event_id = header.decode() if header else document["event_id"]
            profile = document.get("profile") or {}
            row = (profile_id, event_id, profile.get("email"), profile.get("plan"))
            database.execute(UPSERT, row)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="profile_cache")
    parser.add_argument("--batch", type=int, default=100, help="unless the incident sets one")
    options = parser.parse_args(argv)
    service = Service()
    if not service.context.database_url:
        print("profile_cache: REPLAY_DATABASE_URL is not set: this run has no database",
              file=sys.stderr)  # fmt: skip
        return 2
    batch_size = service.context.max_poll_records or options.batch
    with psycopg.connect(service.context.database_url, autocommit=True) as database:
        consumer = service.consumer()
        consumer.subscribe([service.context.input_topic], **service.report.rebalance_callbacks())
        while not service.stopping:
            batch = service.poll(consumer, batch_size, timeout=0.5)
            if not batch:
                continue
            apply(database, batch)
            service.commit(consumer, next_offsets(batch))  # a refusal shows at the next poll
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
