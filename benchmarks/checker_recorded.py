"""The checker's analysis alone, on the checks recorded in ``tests/data/checks``: no broker and
no run to replay, so a change to the analysis is measured in minutes, not in catalog runs.

In one warm session (a lane's, on a driver of its own), each recorded check is analysed once to
warm it, then ``--runs`` times, the checks taking turns; for each, the median time and what it
cost Spark (:func:`~benchmarks.checker_warm.probed`: planning, calls into the JVM, jobs, stages),
the 1-minute load average beside it. Every analysis must find what the check recorded. To
compare two versions of the checker, run it on each, one after the other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from benchmarks.checker_warm import COSTS, _cost, probed

RECORDED = Path(__file__).resolve().parent.parent / "tests" / "data" / "checks"


def run(args: argparse.Namespace) -> None:
    from kafka_replay.checker.recorded_checks import analyse_recorded, recorded_findings
    from kafka_replay.checker.spark import spark_session

    checks = sorted(path.parent for path in RECORDED.glob("*/*/check.json"))
    print(f"\nChecker on {len(checks)} recorded checks ({args.runs} analyses each, medians)")
    spark = spark_session(small_runs=True)  # a lane's session
    spark.sparkContext.setLogLevel("ERROR")
    try:
        measured: dict[Path, list[tuple[float, dict[str, float], float]]] = {c: [] for c in checks}
        for round_ in range(args.runs + 1):
            for check in checks:
                with probed(spark) as cost:
                    began = time.perf_counter()
                    found = analyse_recorded(spark, check)
                    took = time.perf_counter() - began
                if found != recorded_findings(check):
                    raise AssertionError(f"{check}: other findings than those recorded")
                if round_:  # the first round warms each check's queries
                    measured[check].append((took, cost, os.getloadavg()[0]))
        for check, times in measured.items():
            costs = {key: statistics.median(c[key] for _, c, _ in times) for key in COSTS}
            took, load = (statistics.median(t[i] for t in times) for i in (0, 2))
            name = f"{check.parent.name}/{check.name}"
            print(f"  {name}: {took:.2f} s{_cost(costs)} (load {load:.1f})")
        total = sum(statistics.median(t for t, _, _ in times) for times in measured.values())
        print(f"  all {len(checks)} checks: {total:.1f} s of medians")
    finally:
        spark.stop()
