"""Compare matrix: a matrix's wall time beside the sum of its single runs.

A matrix replays its baseline and every candidate one after the other, each side one
``kafka-replay run`` process (its own brokers and Spark). This benchmark runs

    kafka-replay compare --matrix FILE --jobs J --report DIR

on a small matrix (zombie-commit, remediated: Kafka 4.0.2 and 4.4.0 against a 4.4.0 baseline,
three setups) and reports, from the comparison's ``report.json``: the matrix's wall time, each
side's wall time, the sum of the runs' own times, and the ratios between them. The gap between
the matrix and the sum of its sides is what compare adds; the gap between a side and its runs
is broker and Spark start-up.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

MATRIX = """\
baseline = "kafka=4.4.0"
incidents = ["zombie-commit"]
profile = "remediated"
[axes]
kafka = ["4.0.2", "4.4.0"]
"""
TIMEOUT_S = 3600


def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as scratch:
        root = Path(scratch)
        (root / "matrix.toml").write_text(MATRIX)
        command = [
            sys.executable, "-m", "kafka_replay.cli", "compare",
            "--matrix", str(root / "matrix.toml"),
            "--jobs", str(args.jobs), "--report", str(root / "out"),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
        report = root / "out" / "report.json"
        if not report.exists():
            raise RuntimeError(f"compare wrote no report ({result.returncode}):\n{result.stderr}")
        payload = json.loads(report.read_text())
    sides = [("baseline " + payload["baseline"]["setup"], payload["baseline"]["wall_s"])]
    sides += [(c["setup"], c["wall_s"]) for c in payload["candidates"]]
    sides_s = sum(seconds for _, seconds in sides)
    print("compare-matrix: zombie-commit (remediated) on 3 setups, one after the other")
    for label, seconds in sides:
        print(f"  {label:<24} {seconds:7.1f} s")
    wall, runs = payload["wall_s"], payload["runs_s"]
    print(f"  matrix wall time        {wall:7.1f} s")
    print(f"  sum of its sides        {sides_s:7.1f} s  (matrix / sides {wall / sides_s:.2f}x)")
    print(f"  sum of the runs' times  {runs:7.1f} s  (matrix / runs {wall / runs:.2f}x)")
    print(f"  regressions             {payload['regressions']} (exit {result.returncode})")
