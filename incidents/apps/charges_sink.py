"""The catalog's Kafka Connect service: Debezium's JDBC sink connector writing a charge row per
record, run by the harness's Connect worker (``kafka_replay.apps.connect_worker``).

``python -m kafka_replay_incidents.apps.charges_sink [worker options]``: the connector of
``connect/charges-sink.json`` with its plugin from Maven Central; any option of the worker
(``--worker KEY=VALUE``, ``--set KEY=VALUE``) is passed on. ``charge_events`` is the workload:
flat charge documents, as a JDBC sink writes them into columns.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from faker import Faker

from kafka_replay.apps import connect_worker

CONNECTOR = Path(__file__).with_name("connect") / "charges-sink.json"
#: Debezium's JDBC sink: 3.5.0.Final is the newest whose every dependency Maven Central serves.
PLUGIN = "io.debezium:debezium-connector-jdbc:3.5.0.Final"


def charge_events(
    fake: Faker, rng: random.Random, count: int = 2000, students: int = 200
) -> Iterator[dict[str, Any]]:
    """``count`` charges for ``students`` students."""
    ids = [f"student-{fake.unique.random_int(100000, 999999)}" for _ in range(students)]
    for _ in range(count):
        yield {
            "student": rng.choice(ids),
            "amount_cents": rng.randrange(500, 50000),
            "description": fake.catch_phrase(),
        }


def main() -> int:
    return connect_worker.main([str(CONNECTOR), "--plugin", PLUGIN, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
