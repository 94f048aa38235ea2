"""The checker's accounting of a database sink, against tables built by hand on a real
PostgreSQL and read through Spark's JDBC source: every acknowledged input is charged once,
never (lost), in several rows (duplicate), or once with its effect applied again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.checker import JdbcOutput, check_run, sources
from kafka_replay.sinks.database import postgres_jdbc_jar
from kafka_replay.sinks.postgres import PostgresServer, postgres_unavailable
from tests.test_checker import commit, write_run

pytestmark = pytest.mark.skipif(
    postgres_unavailable() is not None, reason=postgres_unavailable() or ""
)

ACKS = [(f"e{i}", f"student-{i}", 0, 0, i) for i in range(6)]
#: (event_id, amount_cents): e0, e1, e4 and e5 charged once, e2 twice, e3 never; one charge
#: for an input nobody sent
CHARGES = [("e0", 500), ("e1", 1500), ("e2", 500), ("e2", 500), ("e4", 500), ("e5", 500)]
CHARGES += [("x9", 500)]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    with PostgresServer(tmp_path_factory.mktemp("postgres")) as server:
        server.execute(
            "CREATE TABLE charges (event_id text NOT NULL, amount_cents bigint NOT NULL);"
            "CREATE TABLE counters (event_id text PRIMARY KEY, times int NOT NULL);"
        )
        values = ", ".join(f"('{event_id}', {amount})" for event_id, amount in CHARGES)
        server.execute(f"INSERT INTO charges VALUES {values}")
        # an idempotent upsert that still counted e1 twice in its one row
        server.execute("INSERT INTO counters VALUES ('e0', 1), ('e1', 2), ('e2', 1), ('e3', 1),"
                       " ('e4', 1), ('e5', 1)")  # fmt: skip
        yield server


@pytest.fixture(scope="module")
def with_driver(spark: SparkSession) -> SparkSession:
    spark.sql(f"ADD JAR '{postgres_jdbc_jar()}'")
    return spark


def check(spark: SparkSession, tmp_path: Path, output: JdbcOutput, guarantee: str):
    run = write_run(tmp_path, ACKS, offsets=[commit(len(ACKS))])
    return check_run(spark, run, output, guarantee)


def test_rows_account_for_every_input(
    with_driver: SparkSession, database: PostgresServer, tmp_path: Path
) -> None:
    output = JdbcOutput(
        database.jdbc_url, "charges", "org.postgresql.Driver", effect_column="amount_cents"
    )
    result = check(with_driver, tmp_path, output, "at-least-once")
    counts = {name: count for name, count in result.counts.items() if count}
    assert counts == {"lost": 1, "duplicate": 1, "unexpected": 1, "effect_repeated": 1}
    assert [e["event_id"] for e in result.findings["lost"].examples] == ["e3"]
    (charged_twice,) = result.findings["effect_repeated"].examples
    assert (charged_twice["event_id"], charged_twice["effect"], charged_twice["rows"]) == (
        "e2", 1000.0, 2,
    )  # fmt: skip
    assert (result.verdict, result.result) == ("lossy", "fail")


def test_an_effect_counted_twice_in_one_row_is_a_duplicate(
    with_driver: SparkSession, database: PostgresServer, tmp_path: Path
) -> None:
    output = JdbcOutput(
        database.jdbc_url,
        "(SELECT event_id, times FROM counters) AS counted",
        "org.postgresql.Driver",
        effect_column="times",
        effect_each=1,
    )
    result = check(with_driver, tmp_path, output, "exactly-once")
    counts = {name: count for name, count in result.counts.items() if count}
    assert counts == {"effect_repeated": 1}
    assert result.findings["effect_repeated"].examples[0]["event_id"] == "e1"
    assert (result.verdict, result.result) == ("at-least-once", "fail")


def test_an_exactly_once_table_passes(
    with_driver: SparkSession, database: PostgresServer, tmp_path: Path
) -> None:
    output = JdbcOutput(
        database.jdbc_url,
        "(SELECT DISTINCT event_id, amount_cents FROM charges WHERE event_id LIKE 'e%') AS once",
        "org.postgresql.Driver",
        effect_column="amount_cents",
    )
    result = check(with_driver, tmp_path, output, "exactly-once")
    assert {n: c for n, c in result.counts.items() if c} == {"lost": 1}  # e3 was never charged


def test_a_time_column_is_each_rows_output_time(
    with_driver: SparkSession, database: PostgresServer
) -> None:
    database.execute(
        "CREATE TABLE stamped (event_id text NOT NULL, charged_at timestamptz NOT NULL);"
        "INSERT INTO stamped VALUES ('e0', '2024-05-01 12:00:00.123+00'),"
        " ('e1', '2024-05-01 14:00:01.5+02'), ('e1', '2024-05-01 12:00:02+00');"
    )

    def out_times(time_column: str | None) -> list[tuple[str, int | None]]:
        rows = sources.jdbc_table(
            with_driver, database.jdbc_url, "stamped", "org.postgresql.Driver",
            time_column=time_column,
        )  # fmt: skip
        found = [(r["event_id"], r["out_ts_ms"]) for r in sources.positionless(rows).collect()]
        return sorted(found, key=lambda row: (row[0], row[1] or 0))

    written = [("e0", 1714564800123), ("e1", 1714564801500), ("e1", 1714564802000)]
    assert out_times("charged_at") == written  # epoch milliseconds, whatever the zone written
    assert out_times(None) == [("e0", None), ("e1", None), ("e1", None)]  # no column, no time


#: A profile table's inputs, (event_id, key, offset, delete): p1 changed, p2 changed, p3 and p4
#: deleted, p5 created.
STATE_ACKS = [
    ("e10", "p1", 0, False), ("e11", "p1", 1, False), ("e20", "p2", 2, False),
    ("e21", "p2", 3, False), ("e30", "p3", 4, False), ("e31", "p3", 5, True),
    ("e40", "p4", 6, False), ("e41", "p4", 7, True), ("e50", "p5", 8, False),
]  # fmt: skip


def test_a_state_table_is_judged_by_each_keys_last_input(
    with_driver: SparkSession, database: PostgresServer, tmp_path: Path
) -> None:
    # p1 right, p2 at its first value, p3 kept after its delete, p4 gone as it should be, p5
    # never written, and a row of no input
    database.execute(
        "CREATE TABLE profiles (profile_id text PRIMARY KEY, event_id text NOT NULL);"
        "INSERT INTO profiles VALUES ('p1', 'e11'), ('p2', 'e20'), ('p3', 'e30'), ('p9', 'x9');"
    )
    acks = [(event_id, key, 0, 0, offset) for event_id, key, offset, _ in STATE_ACKS]
    run = write_run(tmp_path, acks, offsets=[commit(len(STATE_ACKS))])
    produce = run / "events" / "produce.jsonl"
    deletes = {e for e, *_, delete in STATE_ACKS if delete}
    lines = [json.loads(line) for line in produce.read_text().splitlines()]
    produce.write_text(
        "".join(json.dumps({**a, "delete": a["event_id"] in deletes}) + "\n" for a in lines)
    )
    output = JdbcOutput(
        database.jdbc_url, "profiles", "org.postgresql.Driver", key_column="profile_id"
    )
    result = check_run(with_driver, run, output, "at-least-once")
    counts = {name: count for name, count in result.counts.items() if count}
    assert counts == {"stale_value": 1, "resurrected_key": 1, "lost": 1, "unexpected": 1}
    (stale,) = result.findings["stale_value"].examples
    assert (stale["key"], stale["event_id"], stale["last_event_id"]) == ("p2", "e20", "e21")
    (resurrected,) = result.findings["resurrected_key"].examples
    assert (resurrected["key"], resurrected["last_event_id"]) == ("p3", "e31")
    assert [e["event_id"] for e in result.findings["lost"].examples] == ["e50"]
    # p1's and p5's last inputs: p2's is accounted for as stale, p3's and p4's deleted them
    assert result.totals["acknowledged"] == 2
    assert (result.verdict, result.result) == ("at-most-once", "fail")
