"""Shards: the catalog in N shards, one after another, against the catalog in one run.

A team that outgrows one runner gives each runner ``--shard K/N`` and merges the shards'
reports (``kafka-replay report OUT --merge DIR...``). This benchmark replays the whole catalog
as ``./dev main`` does (``run --all --jobs J``), then each shard of it in turn on the same
machine, merges them, and reports each shard's wall time over the whole run's (a shard is worth
its runner when that is well under one: the split is by the durations the catalog ships) and
whether the merged report gives every run the verdict the whole run gave. It fails when a
verdict differs or a run did not pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 3600


def _kafka_replay(*arguments: str) -> float:
    """Run ``kafka-replay`` and return its wall time (its verdicts are read from its report)."""
    command = [sys.executable, "-m", "kafka_replay.cli", *arguments]
    started = time.monotonic()
    subprocess.run(command, capture_output=True, timeout=TIMEOUT_S, check=False)
    return time.monotonic() - started


def _verdicts(report: Path) -> dict[str, tuple[str, bool]]:
    if not (report / "report.json").is_file():
        raise SystemExit(f"shards: kafka-replay wrote no report in {report}")
    runs = json.loads((report / "report.json").read_text())["runs"]
    return {f"{r['incident']} [{r['profile']}]": (r["verdict"], r["passed"]) for r in runs}


def run(args: argparse.Namespace) -> None:
    shards = args.shards
    jobs = str(args.jobs)
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as scratch:
        out = Path(scratch)
        whole_s = _kafka_replay("run", "--all", "--jobs", jobs, "--report", str(out / "whole"))
        load = os.getloadavg()[1]
        print(f"the catalog in one run: {whole_s:.0f} s (load {load:.1f})", flush=True)
        shard_dirs: list[str] = []
        worst = 0.0
        for k in range(1, shards + 1):
            directory = out / f"shard-{k}"
            shard_dirs.append(str(directory))
            wall = _kafka_replay(
                "run", "--all", "--jobs", jobs, "--shard", f"{k}/{shards}",
                "--report", str(directory),
            )  # fmt: skip
            worst = max(worst, wall / whole_s)
            print(
                f"shard {k}/{shards}: {wall:.0f} s, {wall / whole_s:.2f} of the whole run, "
                f"{len(_verdicts(directory))} runs (load {os.getloadavg()[1]:.1f})",
                flush=True,
            )
        _kafka_replay("report", str(out / "merged"), "--merge", *shard_dirs)
        whole, merged = _verdicts(out / "whole"), _verdicts(out / "merged")
    every_run = whole.keys() | merged.keys()
    differ = sorted(run for run in every_run if whole.get(run) != merged.get(run))
    failed = sorted(run for run, (_, passed) in whole.items() if not passed)
    for run_ in differ:
        print(f"  differs: {run_}: whole {whole.get(run_)}, merged {merged.get(run_)}")
    for run_ in failed:
        print(f"  not passed in the whole run: {run_}")
    print(
        f"merged: {len(merged)} runs, {len(whole) - len(differ)} of {len(whole)} verdicts as the "
        f"whole run's; the longest shard took {worst:.2f} of the whole run"
    )
    if differ or failed or not whole:
        raise SystemExit("shards: the merged report differs from the whole run, or a run failed")
