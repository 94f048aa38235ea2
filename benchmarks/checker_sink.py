"""The checker on a sink's 1M-row PostgreSQL table against the same check on a topic.

A run whose app writes to a database is checked from its table (``JdbcOutput``; PostgreSQL
is read in as many parts as Spark has cores, split by ``hashtext`` of the id) where other runs
read their output topic. This generates one run as ``checker-scale`` does (1,000,000 inputs;
``--sizes`` for others) and puts its output records, with the same losses, duplicates and
strangers, both on a 12-partition topic of an embedded broker and in a table ``charges
(event_id text, amount_cents bigint)`` of a PostgreSQL started for it (``COPY``). Its input log
is on a topic too, read by every check as a run's check reads it. Each mode is checked with
``check_run`` ``--runs`` times in one Spark session, the modes taking turns after one
unmeasured check each: the topic, the table, and the table with its effect column (which also
looks for ``effect_repeated``, so it is a mode of its own). Every mode must find what the
topic finds.

Reported: median wall and CPU seconds (the driver JVM and this process, as checker-scale; the
servers' own, the broker's and PostgreSQL's, beside them), output rows/s, the table/topic
ratios, the load average at each check, and the time the table and topics took to load (not
part of a check).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from benchmarks.checker_scale import PARTITIONS, _spark_cpu_s, generate

if TYPE_CHECKING:  # pyspark and the cluster are imported when the benchmark runs
    from pyspark.sql import Column, DataFrame, SparkSession

    from kafka_replay.cluster import EmbeddedCluster
    from kafka_replay.sinks.postgres import PostgresServer

SIZES = (1_000_000,)
TABLE = "charges"


def _server_cpu_s(pids: list[int]) -> float:
    """CPU seconds of the servers and their reaped children (PostgreSQL's backends)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


def _one_produce_file(root: Path) -> None:
    """Spark wrote ``produce.jsonl`` as a directory; a run has one file, whose size is what
    ``check_run`` fits the session to (a directory's would make 1M inputs look small)."""
    parts = root / "events" / "produce.jsonl"
    joined = root / "events" / "produce.joined"
    with joined.open("wb") as out:
        for part in sorted(parts.glob("part-*")):
            with part.open("rb") as lines:
                shutil.copyfileobj(lines, out)
    shutil.rmtree(parts)
    joined.rename(parts)


def _commits_after(root: Path, ts_ms: int) -> None:
    """Move the final commits past the topic's record times: the generator's come after its
    own output times, and a repeat before a commit is no ``reprocessing_after_reset``."""
    path = root / "events" / "offsets.jsonl"
    commits = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**c, "log_ts_ms": ts_ms}) + "\n" for c in commits))


def _to_topic(frame: DataFrame, bootstrap: str, topic: str, key: Column, value: Column) -> None:
    """Write rows in (partition, offset) order, each partition by one task: its order kept."""
    from pyspark.sql import functions as F

    header = F.struct(
        F.lit("event_id").alias("key"), F.col("event_id").cast("binary").alias("value")
    )
    (
        frame.repartition(PARTITIONS, "partition")
        .sortWithinPartitions("partition", "offset")
        .select(
            "partition", key.alias("key"), value.alias("value"), F.array(header).alias("headers")
        )
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.linger.ms", "20")
        .option("kafka.batch.size", str(512 * 1024))
        .option("topic", topic)
        .save()
    )


def _load(
    spark: SparkSession, root: Path, cluster: EmbeddedCluster, server: PostgresServer
) -> tuple[str, str, int, float, float]:
    """The input log and output on topics, the output in the table: (input topic, output
    topic, table rows, seconds for the topics, seconds for the table's COPY)."""
    from pyspark.sql import functions as F

    from kafka_replay.checker.sources import LOG_SCHEMA, OUTPUT_SCHEMA

    started = time.perf_counter()
    source = cluster.create_topic("bench-input", PARTITIONS)
    log = spark.read.schema(LOG_SCHEMA).json(str(root / "log"))
    stamped = F.to_json(F.struct("event_id", "key", "seq"))  # as the workload writes a value
    _to_topic(log, cluster.bootstrap_servers, source, F.col("key"), stamped)
    output = cluster.create_topic("bench-output", PARTITIONS)
    rows = (
        spark.read.schema(OUTPUT_SCHEMA)
        .json(str(root / "output"))
        .select(
            "event_id",
            F.col("out_partition").alias("partition"),
            F.col("out_offset").alias("offset"),
            (F.abs(F.hash("event_id")) % 900 + 100).cast("long").alias("amount_cents"),
        )
    )
    charge = F.to_json(F.struct("event_id", "amount_cents"))
    _to_topic(rows, cluster.bootstrap_servers, output, F.lit(None).cast("string"), charge)
    topics_s = time.perf_counter() - started
    csv = root / "charges"
    rows.orderBy("partition", "offset").select("event_id", "amount_cents").write.csv(str(csv))
    server.execute(f"CREATE TABLE {TABLE} (event_id text, amount_cents bigint)")
    started = time.perf_counter()
    statement = f"COPY {TABLE} (event_id, amount_cents) FROM STDIN (FORMAT csv)"
    with (
        psycopg.connect(server.url, autocommit=True) as connection,
        connection.cursor().copy(statement) as copy,
    ):
        for part in sorted(csv.glob("part-*")):
            with part.open("rb") as lines:
                while chunk := lines.read(1 << 20):
                    copy.write(chunk)
    table_s = time.perf_counter() - started
    count = server.query(f"SELECT count(*) FROM {TABLE}")[0][0]
    return source, output, count, topics_s, table_s


def run(args: argparse.Namespace) -> None:
    from kafka_replay.checker import spark_session
    from kafka_replay.cluster import EmbeddedCluster, choose_version
    from kafka_replay.sinks.database import postgres_jdbc_jar
    from kafka_replay.sinks.postgres import PostgresServer, postgres_unavailable

    if reason := postgres_unavailable():
        print(f"\nchecker-sink skipped: {reason}")
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(SIZES)
    version = choose_version(args.kafka_version)
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"ADD JAR '{postgres_jdbc_jar()}'")  # as a sink run adds it
    print(
        f"\nChecker on a table against a topic ({args.runs} checks per mode, medians; one session)"
    )
    try:
        for inputs in sizes:
            root = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-"))
            server = PostgresServer(root / "postgres")
            try:
                with EmbeddedCluster(version) as cluster:
                    _measure(spark, args.runs, inputs, root, cluster, server.start())
            finally:
                server.stop()
                shutil.rmtree(root, ignore_errors=True)
    finally:
        spark.stop()


def _measure(
    spark: SparkSession,
    runs: int,
    inputs: int,
    root: Path,
    cluster: EmbeddedCluster,
    server: PostgresServer,
) -> None:
    from kafka_replay.checker.check import check_run
    from kafka_replay.checker.outputs import JdbcOutput, KafkaOutput

    expected = generate(spark, root, inputs)
    _one_produce_file(root)
    source, output, rows, topics_s, table_s = _load(spark, root, cluster, server)
    _commits_after(root, int(time.time() * 1000) + 3_600_000)
    bootstrap, jdbc = cluster.bootstrap_servers, (server.jdbc_url, TABLE, "org.postgresql.Driver")
    modes = {
        "topic": KafkaOutput(bootstrap, output),
        "table": JdbcOutput(*jdbc),
        "table + effect column": JdbcOutput(*jdbc, effect_column="amount_cents"),
    }
    servers = [cluster.nodes[0].process.pid, server.process.pid]
    wall: dict[str, list[float]] = {mode: [] for mode in modes}
    cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    served: dict[str, list[float]] = {mode: [] for mode in modes}
    loads: list[float] = []
    found: dict[str, dict[str, int]] = {}
    for round_ in range(runs + 1):
        for mode, out in modes.items():
            started, used, busy = time.perf_counter(), _spark_cpu_s(spark), _server_cpu_s(servers)
            result = check_run(
                spark, root, out, "exactly-once", source=KafkaOutput(bootstrap, source), examples=3
            )
            if round_:  # the first round warms the session up for every mode
                wall[mode].append(time.perf_counter() - started)
                cpu[mode].append(_spark_cpu_s(spark) - used)
                served[mode].append(_server_cpu_s(servers) - busy)
                loads.append(os.getloadavg()[0])
            counts = {name: n for name, n in result.counts.items() if n}
            assert found.setdefault(mode, counts) == counts, (mode, counts, found[mode])
    repeated = found["table + effect column"].pop("effect_repeated", 0)
    differ = {mode: f for mode, f in found.items() if f != found["topic"]}
    print(f"  {inputs:>11,} inputs, {rows:,} output rows   found {found['topic']}")
    copy_rate = rows / table_s
    print(f"    loaded: topics {topics_s:.1f} s; table {table_s:.1f} s ({copy_rate:,.0f} rows/s)")
    for mode in modes:
        seconds, runs_s = statistics.median(wall[mode]), ", ".join(f"{s:.1f}" for s in wall[mode])
        print(
            f"    {mode:<22} {seconds:6.1f} s  {rows / seconds:>9,.0f} rows/s  (CPU "
            f"{statistics.median(cpu[mode]):.1f} s, servers "
            f"{statistics.median(served[mode]):.1f} s; runs {runs_s})"
        )
    topic = statistics.median(wall["topic"])
    for mode in ("table", "table + effect column"):
        time_ratio = statistics.median(wall[mode]) / topic
        cpu_ratio = statistics.median(cpu[mode]) / statistics.median(cpu["topic"])
        print(f"    {mode}/topic: time {time_ratio:.2f}, CPU {cpu_ratio:.2f}")
    print(f"    effect_repeated {repeated} (only a table with an effect column has it)")
    print(f"    load average (1 min) at the checks: median {statistics.median(loads):.2f}, "
          f"{min(loads):.2f} to {max(loads):.2f}")  # fmt: skip
    for name, count in expected.items():
        assert found["topic"].get(name) == count, (name, found["topic"])
    assert not differ, ("the table's findings differ from the topic's", found)
