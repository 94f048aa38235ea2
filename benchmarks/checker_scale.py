"""The Spark checker on generated runs of 1M and 10M inputs, beside a single-process check.

A run is generated with Spark: acknowledged inputs over 12 partitions and 10,000 keys, the
input log as the brokers kept it (as every run reads it), where 0.01% of the acknowledged
writes are lost, 0.01% written twice and about 0.01% written after the next record of their
key, an output where 0.1% of inputs are lost, 0.1% duplicated and 0.01% of records
unexpected (and the log's second copies delivered again), and a final commit per partition
past every input. Both sides read the same JSON-lines files:

- Spark: the full checker (every anomaly), ``local[2]``;
- single process: plain Python dictionaries computing the record-level anomalies (lost,
  unseen, duplicate, reordered, unexpected, lost_write, log_duplicate, log_reordered), which
  are where the data volume is; the history-level ones read streams of a few lines.

The single-process side runs in a child process limited to the memory Spark is given
(``MEMORY_BUDGET``, 8 GiB of address space): past about 15M inputs (measured without the
input log, which adds about half to its memory) its dictionaries no longer fit and it stops
with a MemoryError, which is reported as such (``--sizes 50000000`` shows it; that run needs
more than 10 GB of disk for its generated data, deleted afterwards).

Each size is checked ``--runs`` times, the two sides taking turns. Reported: median wall time,
inputs/s, inputs per second per core (Spark's ``local[2]`` has two, the single process one)
and per CPU-second, the load average beside each check, the median time ratio, peak memory
(the driver JVM and this Python process for Spark; the child process for the single-process
side), and how time grows from the smaller run to the larger.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SIZES = (1_000_000, 10_000_000)
PARTITIONS = 12
KEYS = 10_000
MEMORY_BUDGET = 8 * 1024**3  # what either side may use: Spark's driver stays far below it


def generate(spark, root: Path, inputs: int) -> dict[str, int]:
    """Write ``events/produce.jsonl``, ``events/offsets.jsonl``, ``log/`` and ``output/``."""
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
    lost_write = F.col("id") % 10_000 == 11  # acknowledged, then lost with its leader
    copied = F.col("id") % 10_000 == 13  # a retry the broker appended a second time
    # written just after the key's next record (KEYS later); a modulus apart from KEYS'
    # moves one record of a key, not all of them
    late = F.col("id") % 10_007 == 5
    after_next = ((F.col("id") + KEYS) / (KEYS / PARTITIONS)).cast("long") + 1
    written = ids.filter(~lost_write).withColumn(
        "offset", F.when(late, after_next).otherwise(F.col("offset"))
    )
    second = written.filter(copied).withColumn("offset", F.col("offset") + inputs)
    log = written.unionByName(second).select("event_id", "key", "seq", "partition", "offset")
    log.write.mode("overwrite").json(str(root / "log"))
    kept = ids.filter((F.col("id") % 1000 != 7) & ~lost_write)
    again = ids.filter(F.col("id") % 1000 == 3).withColumn("offset", F.col("offset") + inputs)
    again = again.unionByName(
        ids.filter(copied).withColumn("offset", F.col("offset") + 2 * inputs)
    )  # the app read both copies: no duplicate
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
    reordered_in_log = sum(
        1 for i in range(5, inputs - KEYS, 10_007) if i % 10_000 != 11
    )  # the key's next record exists and was not lost
    return {
        "lost": inputs // 1000,
        "duplicate": inputs // 1000,
        "unexpected": inputs // 10_000,
        "lost_write": len(range(11, inputs, 10_000)),
        "log_duplicate": len(range(13, inputs, 10_000)),
        "log_reordered": reordered_in_log,
    }


def spark_check(spark, root: Path) -> dict[str, int]:
    from kafka_replay.checker import analyse
    from kafka_replay.checker.check import history_inputs
    from kafka_replay.checker.sources import LOG_SCHEMA, OUTPUT_SCHEMA

    committed = spark.read.schema(OUTPUT_SCHEMA).json(str(root / "output"))
    log = spark.read.schema(LOG_SCHEMA).json(str(root / "log"))
    findings = analyse(history_inputs(spark, root, committed, source=log), examples=3)
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
    copies: Counter[str] = Counter()
    log: list[tuple[int, int, str, int, str]] = []
    for part in sorted((root / "log").glob("part-*")):
        with part.open() as lines:
            for line in lines:
                r = json.loads(line)
                copies[r["event_id"]] += 1
                log.append((r["partition"], r["offset"], r["key"], r["seq"], r["event_id"]))
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
        if event_id not in copies:
            counts["lost_write"] += 1
        elif event_id not in deliveries:
            counts["lost" if offset < committed.get(partition, -1) else "unseen_at_deadline"] += 1
    counts["duplicate"] = sum(
        1 for e, n in deliveries.items() if n > max(copies[e], 1) and e in inputs
    )
    counts["unexpected"] = sum(
        n for e, n in deliveries.items() if e not in inputs and e not in copies
    )
    counts["log_duplicate"] = sum(1 for n in copies.values() if n > 1)
    previous: dict[tuple[int, str], int] = {}
    written: set[str] = set()
    for partition, _, key, seq, event_id in sorted(log):
        if event_id in written:
            continue
        written.add(event_id)
        if seq < previous.get((partition, key), -1):
            counts["log_reordered"] += 1
        previous[(partition, key)] = seq
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


def _single_process_child(root: str, budget: int) -> None:
    """Run in the child: the check under an address-space limit, its result as JSON."""
    resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    started = time.perf_counter()
    try:
        found: dict[str, int] | None = single_process_check(Path(root))
        error = None
    except MemoryError:
        found, error = None, "MemoryError"
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "found": found,
                "seconds": seconds,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "peak_mib": usage.ru_maxrss / 1024,
                "error": error,
            }
        )
    )


def single_process_limited(root: Path, budget: int = MEMORY_BUDGET) -> dict:
    """The single-process check in a child process, so its memory is its own and bounded."""
    code = (
        "import sys; from benchmarks.checker_scale import _single_process_child as child; "
        "child(sys.argv[1], int(sys.argv[2]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root), str(budget)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        tail = (done.stderr or "").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        nan = float("nan")
        return {"found": None, "seconds": nan, "cpu_s": nan, "peak_mib": nan, "error": tail[0]}
    return json.loads(lines[-1])


def _spark_cpu_s(spark) -> float:
    """CPU seconds the driver JVM and this process have used: on a shared machine the fair
    measure beside wall time, which counts the time spent waiting for a core too."""
    pid = spark.sparkContext._gateway.proc.pid
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    jvm = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return jvm + usage.ru_utime + usage.ru_stime


def _jvm_peak_mib(spark) -> float:
    pid = spark.sparkContext._gateway.proc.pid  # the driver JVM PySpark launched
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _python_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(args: argparse.Namespace) -> None:
    from kafka_replay.checker import spark_session  # here: the single-process child needs no Spark

    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(SIZES)
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    times: dict[str, dict[int, float]] = {"spark": {}, "single": {}}
    print(
        "\nChecker scale (12 partitions, 10,000 keys; 0.1% lost, 0.1% duplicated; "
        "0.01% lost, written twice and late in the input log)"
    )
    print(f"  single process limited to {MEMORY_BUDGET / 1024**3:.0f} GiB of address space")
    cores = spark.sparkContext.defaultParallelism
    for inputs in sizes:
        root = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-"))
        try:
            expected = generate(spark, root, inputs)
            rounds: dict[str, list[dict]] = {"spark": [], "single": []}
            for _ in range(args.runs):  # the two take turns, so both see the same machine
                started, cpu = time.perf_counter(), _spark_cpu_s(spark)
                found = spark_check(spark, root)
                rounds["spark"].append(
                    {"seconds": time.perf_counter() - started, "cpu_s": _spark_cpu_s(spark) - cpu,
                     "load": os.getloadavg()[0]}
                )  # fmt: skip
                single = single_process_limited(root)
                rounds["single"].append({**single, "load": os.getloadavg()[0]})
                for name, count in expected.items():
                    assert found.get(name) == count, (name, found)
                    if single["found"] is not None:
                        assert single["found"].get(name) == count, (name, single["found"])
            spark_peak = _jvm_peak_mib(spark)
            print(f"  {inputs:>11,} inputs   found {found}")
            failed = [r["error"] for r in rounds["single"] if r["error"]]
            peak = max(r["peak_mib"] for r in rounds["single"])  # a failed one's too
            rounds["single"] = [r for r in rounds["single"] if not r["error"]]  # their time is
            # how long it took to fail, no check's
            for side, used in (("spark", cores), ("single", 1)):
                if not rounds[side]:
                    continue
                seconds = statistics.median(r["seconds"] for r in rounds[side])
                cpu = statistics.median(r["cpu_s"] for r in rounds[side])
                times[side][inputs] = seconds
                each = ", ".join(f"{r['seconds']:.1f}" for r in rounds[side])
                print(
                    f"    {side:<7} {seconds:8.1f} s  {inputs / seconds:>12,.0f} inputs/s, "
                    f"{inputs / seconds / used:,.0f} per second per core ({used}), "
                    f"{inputs / cpu:,.0f} per CPU-second  (CPU {cpu:,.1f} s; runs {each})"
                )
            loads = ", ".join(f"{r['load']:.1f}" for r in rounds["spark"] + rounds["single"])
            print(f"    load average (1 min) after the checks: {loads}")
            if failed:
                limit = MEMORY_BUDGET / 1024**2
                print(
                    f"    single  failed in {len(failed)} of {args.runs} rounds: {failed[0]} "
                    f"(limit {limit:,.0f} MiB)"
                )
            if rounds["single"]:
                single_s = statistics.median(r["seconds"] for r in rounds["single"])
                ratio = times["spark"][inputs] / single_s
                print(f"    spark/single time ratio (medians): {ratio:.2f}")
            print(
                f"    peak memory: Spark driver JVM {spark_peak:,.0f} MiB, Python driver "
                f"{_python_peak_mib():,.0f} MiB; single process {peak:,.0f} MiB"
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for side in ("spark", "single"):
            if large not in times[side] or small not in times[side]:
                continue  # every round of one size failed
            growth = times[side][large] / times[side][small]
            print(f"  {side}: {large // small}x the inputs took {growth:.1f}x the time")
    spark.stop()
