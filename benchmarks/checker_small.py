"""The checker on runs of an incident's size: interpreted, as such checks run, beside compiled.

An incident's run holds a few thousand records, and every query of the checker has a fixed
cost before it reads any: Spark generates Java code for it and compiles it. Below
``SMALL_HISTORY_BYTES`` of history the checker runs interpreted instead
(:func:`kafka_replay.checker.spark.fit_to_history`). This generates runs of 1,200 and 6,000 inputs
(the sizes of the catalog's runs) the way ``checker-scale`` does, then checks each one
``--runs`` times in one Spark session, the two modes taking turns after one unmeasured check
each, and reports the median wall and CPU seconds of each mode and their ratio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.checker_scale import _spark_cpu_s, generate, spark_check

SIZES = (1_200, 6_000)


def run(args: argparse.Namespace) -> None:
    from kafka_replay.checker import spark_session
    from kafka_replay.checker.spark import SMALL_HISTORY_BYTES, fit_to_history

    modes = {"interpreted": 0, "compiled": SMALL_HISTORY_BYTES + 1}  # history bytes to fit to
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    print(f"\nChecker on small runs ({args.runs} checks per mode, medians; one session)")
    try:
        for inputs in SIZES:
            root = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-"))
            try:
                generate(spark, root, inputs)  # its expected counts are for large runs
                agreed: dict[str, int] | None = None
                wall: dict[str, list[float]] = {mode: [] for mode in modes}
                cpu: dict[str, list[float]] = {mode: [] for mode in modes}
                for round_ in range(args.runs + 1):
                    for mode, history_bytes in modes.items():
                        fit_to_history(spark, history_bytes)
                        started, used = time.perf_counter(), _spark_cpu_s(spark)
                        found = spark_check(spark, root)
                        if round_:  # the first round warms the session up for both
                            wall[mode].append(time.perf_counter() - started)
                            cpu[mode].append(_spark_cpu_s(spark) - used)
                        agreed = agreed or found
                        assert found == agreed, (mode, found, agreed)  # both modes agree
                medians = {mode: statistics.median(wall[mode]) for mode in modes}
                print(f"  {inputs:>6,} inputs   found {agreed}")
                for mode in modes:
                    print(
                        f"    {mode:<12} {medians[mode]:6.2f} s  (CPU "
                        f"{statistics.median(cpu[mode]):.2f} s; runs "
                        f"{', '.join(f'{s:.2f}' for s in wall[mode])})"
                    )
                ratio = medians["interpreted"] / medians["compiled"]
                print(f"    interpreted/compiled time ratio {ratio:.2f}")
            finally:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        fit_to_history(spark, SMALL_HISTORY_BYTES + 1)
        spark.stop()
