"""The Spark checker on generated runs of 1M and 10M inputs, beside a single-process check.

A run is generated with Spark: acknowledged inputs over 12 partitions and 10,000 keys, an
output where 0.1% of inputs are lost, 0.1% duplicated and 0.01% of records unexpected, and a
final commit per partition past every input. Both sides read the same JSON-lines files:

- Spark: the full checker (all ten anomalies), ``local[2]``;
- single process: plain Python dictionaries computing the record-level anomalies (lost,
  unseen, duplicate, reordered, unexpected), which are where the data volume is; the
  history-level ones read streams of a few lines.

Reported: wall time, inputs/s, peak memory (driver JVM + Python for Spark; the Python process
for the single-process side), and how time grows from the smaller run to the larger.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness.checker import analyse, spark_session
from harness.checker.check import history_inputs

SIZES = (1_000_000, 10_000_000)
PARTITIONS = 12
KEYS = 10_000


def generate(spark, root: Path, inputs: int) -> dict[str, int]:
    """Write ``events/produce.jsonl``, ``events/offsets.jsonl`` and ``output/`` under root."""
    from pyspark.sql import functions as F

    ids = spark.range(inputs).select(
        F.concat(F.lit("e"), F.col("id")).alias("event_id"),
        F.concat(F.lit("k"), (F.col("id") % KEYS)).alias("key"),
        (F.col("id") / KEYS).cast("long").alias("seq"),
        (F.col("id") % KEYS % PARTITIONS).cast("int").alias("partition"),
        (F.col("id") / (KEYS / PARTITIONS)).cast("long").alias("offset"),
        F.col("id"),
    )
    acks = ids.select(
        F.lit(1.0).alias("ts"),
        F.lit("ack").alias("kind"),
        "event_id",
        "key",
        "seq",
        F.lit("input").alias("topic"),
        "partition",
        "offset",
        F.lit(100).alias("size"),
    )
    acks.write.mode("overwrite").json(str(root / "events" / "produce.jsonl"))
    kept = ids.filter(F.col("id") % 1000 != 7)
    again = ids.filter(F.col("id") % 1000 == 3).withColumn("offset", F.col("offset") + inputs)
    strangers = spark.range(inputs // 10_000).select(
        F.concat(F.lit("x"), F.col("id")).alias("event_id"),
        F.lit(0).alias("partition"),
        (F.col("id") + 3 * inputs).alias("offset"),
    )
    output = (
        kept.select("event_id", "partition", "offset")
        .unionByName(again.select("event_id", "partition", "offset"))
        .unionByName(strangers)
    )
    output.select(
        "event_id",
        F.col("partition").alias("out_partition"),
        F.col("offset").alias("out_offset"),
        F.col("offset").alias("out_ts_ms"),
    ).write.mode("overwrite").json(str(root / "output"))
    with (root / "events" / "offsets.jsonl").open("w") as out:
        for partition in range(PARTITIONS):
            out.write(
                json.dumps(
                    {
                        "ts": 2.0,
                        "kind": "commit",
                        "group": "g",
                        "topic": "input",
                        "partition": partition,
                        "offset": 10 * inputs,
                        "log_offset": partition,
                        "log_ts_ms": 10 * inputs,
                    }
                )
                + "\n"
            )
    return {"lost": inputs // 1000, "duplicate": inputs // 1000, "unexpected": inputs // 10_000}


def spark_check(spark, root: Path) -> dict[str, int]:
    from harness.checker.sources import OUTPUT_SCHEMA

    committed = spark.read.schema(OUTPUT_SCHEMA).json(str(root / "output"))
    findings = analyse(history_inputs(spark, root, committed), examples=3)
    return {name: f.count for name, f in findings.items() if f.count}


def single_process_check(root: Path) -> dict[str, int]:
    inputs: dict[str, tuple[str, int, int, int]] = {}
    for part in sorted((root / "events" / "produce.jsonl").glob("part-*")):
        with part.open() as lines:
            for line in lines:
                r = json.loads(line)
                inputs[r["event_id"]] = (r["key"], r["seq"], r["partition"], r["offset"])
    committed: dict[int, int] = {}
    with (root / "events" / "offsets.jsonl").open() as lines:
        for line in lines:
            r = json.loads(line)
            committed[r["partition"]] = max(committed.get(r["partition"], -1), r["offset"])
    deliveries: Counter[str] = Counter()
    outputs: list[tuple[int, int, str]] = []
    for part in sorted((root / "output").glob("part-*")):
        with part.open() as lines:
            for line in lines:
                r = json.loads(line)
                deliveries[r["event_id"]] += 1
                outputs.append((r["out_partition"], r["out_offset"], r["event_id"]))
    counts = Counter()
    for event_id, (_, _, partition, offset) in inputs.items():
        if event_id not in deliveries:
            counts["lost" if offset < committed.get(partition, -1) else "unseen_at_deadline"] += 1
    counts["duplicate"] = sum(1 for e, n in deliveries.items() if n > 1 and e in inputs)
    counts["unexpected"] = sum(n for e, n in deliveries.items() if e not in inputs)
    last_seq: dict[tuple[int, str], int] = {}
    first_seen: set[str] = set()
    for partition, _, event_id in sorted(outputs):
        if event_id not in inputs or event_id in first_seen:
            continue
        first_seen.add(event_id)
        key, seq = inputs[event_id][0], inputs[event_id][1]
        if seq < last_seq.get((partition, key), -1):
            counts["reordered"] += 1
        last_seq[(partition, key)] = seq
    return {name: n for name, n in counts.items() if n}


def _jvm_peak_mib(spark) -> float:
    pid = spark.sparkContext._gateway.proc.pid  # the driver JVM PySpark launched
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _python_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(SIZES)
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    times: dict[str, dict[int, float]] = {"spark": {}, "single": {}}
    print("\nChecker scale (12 partitions, 10,000 keys; 0.1% lost, 0.1% duplicated)")
    for inputs in sizes:
        root = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-"))
        try:
            expected = generate(spark, root, inputs)
            started = time.perf_counter()
            found = spark_check(spark, root)
            times["spark"][inputs] = time.perf_counter() - started
            started = time.perf_counter()
            baseline = single_process_check(root)
            times["single"][inputs] = time.perf_counter() - started
            gc.collect()
            for name, count in expected.items():
                assert found.get(name) == count == baseline.get(name), (name, found, baseline)
            print(f"  {inputs:>11,} inputs   found {found}")
            for side in ("spark", "single"):
                seconds = times[side][inputs]
                print(f"    {side:<7} {seconds:8.1f} s  {inputs / seconds:>12,.0f} inputs/s")
            print(
                f"    peak memory: Spark driver JVM {_jvm_peak_mib(spark):,.0f} MiB, "
                f"Python process {_python_peak_mib():,.0f} MiB (includes the single-process side)"
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for side in ("spark", "single"):
            growth = times[side][large] / times[side][small]
            print(f"  {side}: {large // small}x the inputs took {growth:.1f}x the time")
    spark.stop()
