"""Lanes: the catalog under ``--jobs`` with a process per run beside a lane per job.

``kafka-replay run --all --jobs J`` gives runs to J lanes. A lane used to replay one run and
exit, so each run started its own Spark driver; now it replays one run after another with one
Spark session. This benchmark runs the catalog both ways, taking turns (``--runs`` rounds;
``KAFKA_REPLAY_RUNS_PER_LANE=1`` is the old way), and reports for each: the wall time, the runs'
own times added up, their checker stage, and how many runs passed, with the medians and the
ratio of the wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_replay.replay.parallel import RUNS_PER_LANE_ENV

MODES = {"a process per run": "1", "a lane per job": ""}
TIMEOUT_S = 3600


def catalog(jobs: int, runs_per_lane: str) -> dict[str, float]:
    """One ``kafka-replay run --all --jobs J``: its wall time and what its report says."""
    with tempfile.TemporaryDirectory(prefix="bench-lanes-") as scratch:
        report = Path(scratch) / "out"
        command = [sys.executable, "-m", "kafka_replay.cli", "run", "--all", "--jobs", str(jobs),
                   "--report", str(report)]  # fmt: skip
        env = {**os.environ, RUNS_PER_LANE_ENV: runs_per_lane}
        started = time.monotonic()
        subprocess.run(command, env=env, capture_output=True, timeout=TIMEOUT_S, check=False)
        wall = time.monotonic() - started
        runs = json.loads((report / "report.json").read_text())["runs"]
    for failed in (r for r in runs if not r["passed"]):
        print(f"  not passed: {failed['incident']} [{failed['profile']}]: {failed['result']}")
    return {
        "wall_s": wall,
        "runs_s": sum(r["duration_s"] for r in runs),
        "checker_s": sum(r["stage_s"].get("checker", 0.0) for r in runs),
        "passed": sum(r["passed"] for r in runs),
        "runs": len(runs),
    }


def run(args: argparse.Namespace) -> None:
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for round_ in range(1, args.runs + 1):
        for mode, runs_per_lane in MODES.items():
            result = catalog(args.jobs, runs_per_lane)
            results[mode].append(result)
            print(
                f"round {round_}, {mode}: {result['wall_s']:.0f} s wall, runs "
                f"{result['runs_s']:.0f} s (checker {result['checker_s']:.0f} s), "
                f"{result['passed']:.0f}/{result['runs']:.0f} passed",
                flush=True,
            )
    medians = {
        mode: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        for mode, rounds in results.items()
    }
    for mode, median in medians.items():
        print(
            f"median, {mode}: {median['wall_s']:.0f} s wall, runs {median['runs_s']:.0f} s "
            f"(checker {median['checker_s']:.0f} s)"
        )
    before, after = (medians[mode]["wall_s"] for mode in MODES)
    print(f"wall time, a lane per job over a process per run: {after / before:.2f}")
