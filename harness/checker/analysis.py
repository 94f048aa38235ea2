"""What happened to every record: each anomaly as a Spark query over the run's data.

Definitions (each reported with a count and a few examples):

- **lost**: acknowledged, never in the committed output, although the group committed an
  offset past it (the app claimed it was processed).
- **unseen at deadline**: acknowledged, not in the committed output, and no commit ever
  passed it: the run stopped waiting before the app got there, so the verdict is unknown.
- **duplicate**: an input delivered more than once in the committed output.
- **aborted read**: an output record visible only without ``read_committed``.
- **reordered**: for one key within one output partition, a first delivery whose ``seq`` is
  lower than the one before it.
- **unexpected**: output whose ``event_id`` matches no input, or that has no ``event_id``
  (null: no identity found in the record).
- **committed offset regression**: a commit lower than the previous commit of the same
  partition (a tombstone in between starts afresh).
- **commit by non-owner**: a commit for a partition the committing member did not hold: not
  in its own assignment, or assigned to another member more recently.
- **reprocessing after reset**: a repeated delivery of an input whose offset had already been
  committed as done before that delivery (offset expiry, seek to beginning, backward commit).
- **stuck lag**: a partition with nothing missing whose group lag stayed above zero at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

ANOMALIES = (
    "lost",
    "unseen_at_deadline",
    "duplicate",
    "aborted_read",
    "reordered",
    "unexpected",
    "committed_offset_regression",
    "commit_by_non_owner",
    "reprocessing_after_reset",
    "stuck_lag",
)


@dataclass
class CheckInputs:
    acks: DataFrame  # acknowledged_inputs()
    committed: DataFrame  # output, read_committed (or files)
    offsets: DataFrame  # the "offsets" stream
    reports: DataFrame  # the "app-*" streams
    lag: DataFrame  # the "lag" stream
    uncommitted: DataFrame | None = None  # output, read_uncommitted (Kafka outputs only)
    source_ids: DataFrame | None = None  # event_id of every record in the source topic


@dataclass
class Finding:
    count: int
    examples: list[dict[str, Any]]
    detail: dict[str, Any] | None = None


def _rows(frame: DataFrame, limit: int) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in frame.limit(limit).collect()]


def _finding(frame: DataFrame, limit: int, order: list[str]) -> Finding:
    frame = frame.cache()
    count = frame.count()
    examples = _rows(frame.orderBy(*order), limit) if count else []
    frame.unpersist()
    return Finding(count, examples)


def analyse(inputs: CheckInputs, examples: int = 5) -> dict[str, Finding]:
    """Every anomaly of :data:`ANOMALIES`, computed on Spark.

    Each query reads ``acks`` and ``committed`` again: cache them first when they are costly
    to read (a Kafka topic), as :func:`~harness.checker.check.check_run` does.
    """
    acks, committed = inputs.acks, inputs.committed
    commits = inputs.offsets.filter(F.col("kind") == "commit")
    delivered = committed.join(acks, "event_id")  # known inputs only, one row per delivery

    findings: dict[str, Finding] = {}
    lost, unseen = _missing(acks, committed, commits)
    findings["lost"] = _finding(lost, examples, ["in_partition", "in_offset"])
    findings["unseen_at_deadline"] = _finding(unseen, examples, ["in_partition", "in_offset"])
    findings["duplicate"] = _duplicates(delivered, examples)
    findings["aborted_read"] = _finding(
        _aborted(committed, inputs.uncommitted), examples, ["out_partition", "out_offset"]
    )
    by_output = ["out_partition", "out_offset"]
    findings["reordered"] = _finding(_reordered(delivered), examples, by_output)
    findings["unexpected"] = _finding(
        _unexpected(committed, acks, inputs.source_ids), examples, ["out_partition", "out_offset"]
    )
    findings["committed_offset_regression"] = _finding(
        _regressions(inputs.offsets), examples, ["log_offset"]
    )
    findings["commit_by_non_owner"] = _finding(_non_owner_commits(inputs.reports), examples, ["ts"])
    findings["reprocessing_after_reset"] = _finding(
        _reprocessed(delivered, commits), examples, ["in_partition", "in_offset"]
    )
    findings["stuck_lag"] = _finding(
        _stuck_lag(inputs.lag, lost.unionByName(unseen)), examples, ["partition"]
    )
    return findings


def _missing(
    acks: DataFrame, committed: DataFrame, commits: DataFrame
) -> tuple[DataFrame, DataFrame]:
    missing = acks.join(committed.select("event_id").distinct(), "event_id", "left_anti")
    progress = commits.groupBy(
        F.col("topic").alias("in_topic"), F.col("partition").alias("in_partition")
    ).agg(F.max("offset").alias("max_committed"))
    judged = missing.join(progress, ["in_topic", "in_partition"], "left")
    passed = F.col("max_committed").isNotNull() & (F.col("in_offset") < F.col("max_committed"))
    columns = ["event_id", "key", "seq", "in_partition", "in_offset", "max_committed", "ack_ts"]
    return judged.filter(passed).select(*columns), judged.filter(~passed).select(*columns)


def _duplicates(delivered: DataFrame, examples: int) -> Finding:
    counts = delivered.groupBy("event_id", "key", "seq", "in_partition", "in_offset").agg(
        F.count("*").alias("deliveries")
    )
    repeated = counts.filter(F.col("deliveries") > 1).cache()
    distribution = {
        str(row["deliveries"]): row["count"]
        for row in repeated.groupBy("deliveries").count().collect()
    }
    finding = Finding(
        repeated.count(),
        _rows(repeated.orderBy(F.desc("deliveries"), "in_partition", "in_offset"), examples),
        {"distribution": dict(sorted(distribution.items(), key=lambda item: int(item[0])))},
    )
    repeated.unpersist()
    return finding


def _aborted(committed: DataFrame, uncommitted: DataFrame | None) -> DataFrame:
    if uncommitted is None:
        return committed.limit(0)
    return uncommitted.join(committed, ["out_partition", "out_offset"], "left_anti")


def _reordered(delivered: DataFrame) -> DataFrame:
    first = delivered.withColumn(
        "delivery",
        F.row_number().over(Window.partitionBy("event_id").orderBy("out_partition", "out_offset")),
    ).filter(F.col("delivery") == 1)
    in_order = Window.partitionBy("out_partition", "key").orderBy("out_offset")
    return (
        first.withColumn("previous_seq", F.lag("seq").over(in_order))
        .filter(F.col("seq") < F.col("previous_seq"))
        .select("event_id", "key", "seq", "previous_seq", "out_partition", "out_offset")
    )


def _unexpected(committed: DataFrame, acks: DataFrame, source_ids: DataFrame | None) -> DataFrame:
    """Output records matched to no input, by position: a null ``event_id`` matches nothing."""
    known = acks.select("event_id")
    if source_ids is not None:
        known = known.unionByName(source_ids.select("event_id"))
    matched = committed.join(known.distinct(), "event_id", "left_semi")
    unmatched = committed.join(
        matched.select("out_partition", "out_offset"), ["out_partition", "out_offset"], "left_anti"
    )
    return unmatched.select("event_id", "out_partition", "out_offset")


def _regressions(offsets: DataFrame) -> DataFrame:
    ordered = Window.partitionBy("group", "topic", "partition").orderBy("log_offset")
    return (
        offsets.withColumn("previous_offset", F.lag("offset").over(ordered))
        .filter(F.col("offset") < F.col("previous_offset"))
        .select(
            "group", "topic", "partition", "previous_offset", "offset", "log_offset", "commit_ts_ms"
        )
    )


def _non_owner_commits(reports: DataFrame) -> DataFrame:
    commits = reports.filter(F.col("kind") == "commit").select(
        "ts", "instance", "member", "assignment", F.explode("offsets").alias("committed")
    )
    commits = commits.select(
        "ts",
        "instance",
        "member",
        "assignment",
        F.col("committed.topic").alias("topic"),
        F.col("committed.partition").alias("partition"),
        F.col("committed.offset").alias("offset"),
    )
    assigned = (
        reports.filter(F.col("kind") == "assigned")
        .select(
            F.col("ts").alias("assigned_ts"),
            F.col("member").alias("owner"),
            F.explode("partitions").alias("p"),
        )
        .select(
            "assigned_ts",
            "owner",
            F.col("p.topic").alias("topic"),
            F.col("p.partition").alias("partition"),
        )
    )
    latest = Window.partitionBy("ts", "member", "topic", "partition").orderBy(F.desc("assigned_ts"))
    owners = (
        commits.join(assigned, ["topic", "partition"], "left")
        .filter(F.col("assigned_ts").isNull() | (F.col("assigned_ts") <= F.col("ts")))
        .withColumn("rank", F.row_number().over(latest))
        .filter(F.col("rank") == 1)
    )
    in_own_assignment = F.exists(
        "assignment", lambda a: (a.topic == F.col("topic")) & (a.partition == F.col("partition"))
    )
    someone_else = F.col("owner").isNotNull() & (F.col("owner") != F.col("member"))
    not_owner = ~in_own_assignment | someone_else
    return owners.filter(not_owner).select(
        "ts",
        "instance",
        "member",
        "topic",
        "partition",
        "offset",
        F.col("owner").alias("last_assigned_to"),
    )


def _reprocessed(delivered: DataFrame, commits: DataFrame) -> DataFrame:
    repeats = delivered.withColumn(
        "delivery",
        F.row_number().over(Window.partitionBy("event_id").orderBy("out_ts_ms", "out_offset")),
    ).filter(F.col("delivery") > 1)
    done = commits.select(
        F.col("topic").alias("in_topic"),
        F.col("partition").alias("in_partition"),
        F.col("offset").alias("done_offset"),
        F.col("log_ts_ms"),
    )
    joined = repeats.join(done, ["in_topic", "in_partition"]).filter(
        F.col("log_ts_ms") <= F.col("out_ts_ms")
    )
    return (
        joined.groupBy("event_id", "key", "seq", "in_partition", "in_offset", "delivery")
        .agg(F.max("done_offset").alias("committed_before"))
        .filter(F.col("in_offset") < F.col("committed_before"))
        .dropDuplicates(["event_id"])
    )


def _stuck_lag(lag: DataFrame, missing: DataFrame) -> DataFrame:
    last = Window.partitionBy("group", "topic", "partition").orderBy(F.desc("ts"))
    final = lag.withColumn("rank", F.row_number().over(last)).filter(F.col("rank") == 1)
    incomplete = missing.select(F.col("in_partition").alias("partition")).distinct()
    return (
        final.filter(F.col("lag") > 0)
        .join(incomplete, "partition", "left_anti")
        .select("group", "topic", "partition", "committed", "end", "lag")
    )
