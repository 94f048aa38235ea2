"""What happened to every record: each anomaly as a Spark query over the run's data.

Each anomaly is one function registered with ``@anomaly`` (its name, how its examples are
ordered, and a docstring whose first line describes it); :func:`analyse` runs them all, and
reports list them in :data:`ANOMALIES` order. ``docs/checker.md`` describes each one, and a
test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


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


def _finding(frame: DataFrame, limit: int, order: tuple[str, ...]) -> Finding:
    frame = frame.cache()
    count = frame.count()
    examples = _rows(frame.orderBy(*order), limit) if count else []
    frame.unpersist()
    return Finding(count, examples)


class Analysis:
    """What the anomaly queries share, each part computed once per check."""

    def __init__(self, inputs: CheckInputs, examples: int) -> None:
        self.inputs, self.examples = inputs, examples

    @cached_property
    def commits(self) -> DataFrame:
        return self.inputs.offsets.filter(F.col("kind") == "commit")

    @cached_property
    def delivered(self) -> DataFrame:
        """Known inputs only, one row per delivery."""
        return self.inputs.committed.join(self.inputs.acks, "event_id")

    @cached_property
    def missing(self) -> tuple[DataFrame, DataFrame]:
        """(lost, unseen at deadline)."""
        return _missing(self.inputs.acks, self.inputs.committed, self.commits)


Query = Callable[[Analysis], "DataFrame | Finding"]


@dataclass(frozen=True)
class Anomaly:
    name: str
    query: Query
    order: tuple[str, ...]  # how its examples are ordered
    description: str


#: Every anomaly the checker looks for, by name, in the order reports list them.
REGISTRY: dict[str, Anomaly] = {}


def anomaly(*order: str) -> Callable[[Query], Query]:
    """Register a query under its function's name; its docstring's first line describes it."""

    def register(query: Query) -> Query:
        description = (query.__doc__ or "").strip().splitlines()[0]
        REGISTRY[query.__name__] = Anomaly(query.__name__, query, order, description)
        return query

    return register


def analyse(inputs: CheckInputs, examples: int = 5) -> dict[str, Finding]:
    """Every registered anomaly, computed on Spark.

    Each query reads ``acks`` and ``committed`` again: cache them first when they are costly
    to read (a Kafka topic), as :func:`~harness.checker.check.check_run` does.
    """
    analysis = Analysis(inputs, examples)
    findings = {}
    for name, found in REGISTRY.items():
        result = found.query(analysis)
        findings[name] = (
            result if isinstance(result, Finding) else _finding(result, examples, found.order)
        )
    return findings


@anomaly("in_partition", "in_offset")
def lost(analysis: Analysis) -> DataFrame:
    """Acknowledged, never in the output, although the group committed past it."""
    return analysis.missing[0]


@anomaly("in_partition", "in_offset")
def unseen_at_deadline(analysis: Analysis) -> DataFrame:
    """Acknowledged, not in the output, and no commit passed it: unknown, not lost."""
    return analysis.missing[1]


@anomaly()
def duplicate(analysis: Analysis) -> Finding:
    """An input delivered more than once (with the distribution of delivery counts)."""
    return _duplicates(analysis.delivered, analysis.examples)


@anomaly("out_partition", "out_offset")
def aborted_read(analysis: Analysis) -> DataFrame:
    """An output record visible only without read_committed."""
    return _aborted(analysis.inputs.committed, analysis.inputs.uncommitted)


@anomaly("out_partition", "out_offset")
def reordered(analysis: Analysis) -> DataFrame:
    """For one key in one output partition, a first delivery with a lower seq than the last."""
    return _reordered(analysis.delivered)


@anomaly("out_partition", "out_offset")
def unexpected(analysis: Analysis) -> DataFrame:
    """Output that matches no input, or in which no event_id was found."""
    inputs = analysis.inputs
    return _unexpected(inputs.committed, inputs.acks, inputs.source_ids)


@anomaly("log_offset")
def committed_offset_regression(analysis: Analysis) -> DataFrame:
    """An accepted commit lower than the partition's previous one (a tombstone resets)."""
    return _regressions(analysis.inputs.offsets)


@anomaly("ts")
def commit_by_non_owner(analysis: Analysis) -> DataFrame:
    """A commit for a partition the committing member did not hold (instrumented apps)."""
    return _non_owner_commits(analysis.inputs.reports)


@anomaly("in_partition", "in_offset")
def reprocessing_after_reset(analysis: Analysis) -> DataFrame:
    """A repeated delivery of an input whose offset had been committed as done before it."""
    return _reprocessed(analysis.delivered, analysis.commits)


@anomaly("partition")
def stuck_lag(analysis: Analysis) -> DataFrame:
    """A partition with nothing missing whose group lag stayed above zero at the end."""
    lost, unseen = analysis.missing
    return _stuck_lag(analysis.inputs.lag, lost.unionByName(unseen))


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


#: The anomalies' names, in report order.
ANOMALIES = tuple(REGISTRY)
