"""Outputs that are not Kafka topics: files and database tables (through JDBC)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from harness.checker import FileOutput, check_run
from tests.test_checker import commit, write_run

ACKS = [(f"e{i}", "k", i, 0, i) for i in range(5)]


def test_output_files_are_checked(spark, tmp_path) -> None:
    run = write_run(tmp_path, ACKS, offsets=[commit(5)])
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-0.json").write_text(
        "".join(json.dumps({"event_id": f"e{i}", "total": i}) + "\n" for i in (0, 1, 2, 4, 4))
    )
    result = check_run(spark, run, FileOutput(str(out)), "at-least-once")
    assert (result.verdict, result.result) == ("lossy", "fail")
    assert {k: v for k, v in result.counts.items() if v} == {"lost": 1, "duplicate": 1}


def test_a_database_table_is_checked_through_jdbc(tmp_path) -> None:
    run = write_run(tmp_path, ACKS, offsets=[commit(5)])
    database = tmp_path / "billing.db"
    with sqlite3.connect(database) as connection:
        connection.execute("create table invoices (event_id text, amount integer)")
        connection.executemany(
            "insert into invoices values (?, ?)", [(f"e{i}", 10 * i) for i in (0, 1, 1, 3, 4)]
        )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "check",
            str(run),
            "--guarantee",
            "at-least-once",
            "--jdbc-url",
            f"jdbc:sqlite:{database}",
            "--jdbc-table",
            "invoices",
            "--jdbc-driver",
            "org.xerial:sqlite-jdbc:3.54.1.0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((run / "check.json").read_text())
    assert report["verdict"] == "lossy"
    assert report["anomalies"]["lost"]["examples"][0]["event_id"] == "e2"
    assert report["anomalies"]["duplicate"]["count"] == 1
