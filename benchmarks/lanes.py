"""Lanes: the catalog as ``./dev main`` runs it, against the bound its incidents' own waits set.

``kafka-replay run --all --jobs J`` gives runs to J lanes. A lane used to replay, check and
judge one run before it started the next; now it checks one run while the next one's steps
run, and warms its Spark session up during its first run. This benchmark runs the catalog both
ways, taking turns (``--runs`` rounds; ``KAFKA_REPLAY_LANE_OVERLAP=0`` is the old way), and
reports for each: the wall time beside the bound (the steps' sum over the lanes, or the
longest run's steps, whichever is larger: what no harness can beat without shortening the
incidents), the runs' stages added up, how many runs passed, and the load average, with the
medians and the ratios.
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

from kafka_replay.playing.parallel import OVERLAP_ENV

MODES = {"one run at a time": "0", "checked beside the next run": ""}
TIMEOUT_S = 3600


def catalog(jobs: int, overlap: str) -> dict[str, float]:
    """One ``kafka-replay run --all --jobs J``: its wall time and what its report says."""
    with tempfile.TemporaryDirectory(prefix="bench-lanes-") as scratch:
        report = Path(scratch) / "out"
        command = [sys.executable, "-m", "kafka_replay.cli", "run", "--all", "--jobs", str(jobs),
                   "--report", str(report)]  # fmt: skip
        env = {**os.environ, OVERLAP_ENV: overlap}
        started = time.monotonic()
        subprocess.run(command, env=env, capture_output=True, timeout=TIMEOUT_S, check=False)
        wall = time.monotonic() - started
        load = os.getloadavg()[1]  # over the last five minutes
        runs = json.loads((report / "report.json").read_text())["runs"]
    for failed in (r for r in runs if not r["passed"] and r.get("gate") != "n/a"):
        print(f"  not passed: {failed['incident']} [{failed['profile']}]: {failed['result']}")
    steps = [r["stage_s"].get("steps", 0.0) for r in runs]
    stages: dict[str, float] = {}
    for r in runs:
        for stage, seconds in r["stage_s"].items():
            stages[stage] = stages.get(stage, 0.0) + seconds
    return {
        "wall_s": wall,
        "bound_s": max(sum(steps) / jobs, max(steps, default=0.0)),
        "runs_s": sum(r["duration_s"] for r in runs),
        **{f"stage {stage}": seconds for stage, seconds in stages.items()},
        "passed": sum(r["passed"] for r in runs),
        "runs": len(runs),
        "load": load,
    }


def _stages(result: dict[str, float]) -> str:
    return ", ".join(
        f"{key.removeprefix('stage ')} {value:.0f}"
        for key, value in result.items()
        if key.startswith("stage ")
    )


def run(args: argparse.Namespace) -> None:
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for round_ in range(1, args.runs + 1):
        for mode, overlap in MODES.items():
            result = catalog(args.jobs, overlap)
            results[mode].append(result)
            print(
                f"round {round_}, {mode}: {result['wall_s']:.0f} s wall, bound "
                f"{result['bound_s']:.0f} s ({result['wall_s'] / result['bound_s']:.2f}x), runs "
                f"{result['runs_s']:.0f} s ({_stages(result)}), "
                f"{result['passed']:.0f}/{result['runs']:.0f} passed, load {result['load']:.1f}",
                flush=True,
            )
    medians = {
        mode: {
            key: statistics.median(r.get(key, 0.0) for r in rounds)
            for key in dict.fromkeys(k for r in rounds for k in r)
        }
        for mode, rounds in results.items()
    }
    for mode, median in medians.items():
        print(
            f"median, {mode}: {median['wall_s']:.0f} s wall, bound {median['bound_s']:.0f} s "
            f"({median['wall_s'] / median['bound_s']:.2f}x), runs {median['runs_s']:.0f} s "
            f"({_stages(median)})"
        )
    before, after = (medians[mode]["wall_s"] for mode in MODES)
    print(f"wall time, checked beside the next run over one run at a time: {after / before:.2f}")
