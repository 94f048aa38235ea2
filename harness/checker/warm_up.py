"""A check of a made-up run, so that a session's first real check finds Spark warm.

A new session's first check costs half again a warm one's (its queries' classes loaded, the
driver's code compiled); a lane runs this while its first run's steps wait, so that cost is
paid beside the steps instead of after them. The made-up run has what every anomaly's query
reads: acknowledgements, an output with a repeat and a stranger, commits and app reports.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from .check import check_run
from .outputs import FileOutput

RECORDS = 40


def _lines(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(exist_ok=True)  # not its parents: a root removed under it stays removed
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def warm_up(spark: SparkSession, within: Path) -> None:
    """Check a small made-up run in ``spark`` (its verdict is of no interest), written under
    ``within``: a directory its caller removes on the way out even if this check is still under
    way then (it runs in a thread that an interrupted process does not wait for)."""
    with tempfile.TemporaryDirectory(
        prefix="warm-up-", dir=within, ignore_cleanup_errors=True
    ) as work:
        root = Path(work)
        check_run(spark, root, made_up_run(root), "exactly-once")


def made_up_run(root: Path) -> FileOutput:
    """A run's history and output written under ``root``: what every anomaly's query reads."""
    root.mkdir(exist_ok=True)  # not its parents (see _lines)
    acks = [
        {
            "ts": 1.0 + i,
            "kind": "ack",
            "event_id": f"w{i}",
            "key": f"k{i % 4}",
            "seq": i // 4,
            "topic": "input",
            "partition": i % 2,
            "offset": i // 2,
            "size": 10,
        }
        for i in range(RECORDS)
    ]
    _lines(root / "events" / "produce.jsonl", acks)
    commits = [
        {
            "ts": 2.0,
            "kind": "commit",
            "group": "g",
            "topic": "input",
            "partition": p,
            "offset": RECORDS // 2 - 1,
            "commit_ts_ms": 2000,
            "log_partition": 0,
            "log_offset": p,
            "log_ts_ms": 2000,
        }
        for p in (0, 1)
    ]
    _lines(root / "events" / "offsets.jsonl", commits)
    own = [{"topic": "input", "partition": 0, "offset": 3}]
    reports = [
        {"ts": 1.0, "kind": "assigned", "instance": 0, "member": "m", "partitions": own},
        {
            "ts": 3.0,
            "kind": "commit",
            "instance": 0,
            "member": "m",
            "offsets": own,
            "assignment": own,
        },
    ]
    _lines(root / "events" / "app-0.jsonl", reports)
    outputs = [{"event_id": f"w{i}"} for i in range(1, RECORDS)] + [
        {"event_id": "w2"},
        {"event_id": "stranger"},
    ]
    _lines(root / "output" / "part-0.json", outputs)
    return FileOutput(str(root / "output"))
