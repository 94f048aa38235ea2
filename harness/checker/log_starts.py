"""Where each input partition's log start moved, and which inputs it passed: what retention
deleted from the input log, told apart from what a broker lost or the app never read.

The lag samples and the input log as read say where each log start was
(:func:`log_start_movements`); an input a movement passed (:func:`passed_by_log_start`) is
retention's doing only if no commit passed it first (:func:`deleted_before_commits`): one that a
commit passed while the log still held it was the app's to deliver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

#: What :func:`passed_by_log_start` adds to an input: the movement of the log start that passed
#: it.
MOVEMENT_COLUMNS = ("deleted_ts_ms", "seen_ts_ms", "log_start_from", "log_start_to")
#: :func:`log_start_movements`' rows.
MOVEMENTS_SCHEMA = (
    "topic string, partition int, log_start_from long, log_start_to long, "
    "deleted_ts_ms long, seen_ts_ms long"
)


def log_start_movements(lag: DataFrame, log: DataFrame, now: DataFrame | None = None) -> DataFrame:
    """Each movement of an input partition's log start: ``topic``, ``partition``, the offsets
    it moved from (inclusive) and to (exclusive), ``deleted_ts_ms`` (the first lag sample that
    showed it moved) and ``seen_ts_ms`` (the sample before, the last that showed it where it
    was; null for none).

    The lag samples hold the log start over time (``start``). The input log read at check time
    (``log``, empty when not read) adds one last movement, from the last sample's start to its
    first record, or to where the log started once it was read (``now``: ``topic``,
    ``partition``, ``start``): at check time, after the last sample (``deleted_ts_ms`` null).
    The movements are disjoint: each runs from the highest start seen before it.
    """
    samples = lag.filter(F.col("start").isNotNull()).select(
        "topic", "partition", (F.col("ts") * 1000).cast("long").alias("ts_ms"), "start"
    )
    first = log.groupBy(
        F.col("in_topic").alias("topic"), F.col("in_partition").alias("partition")
    ).agg(F.min("in_offset").alias("start"))
    if now is not None:  # one movement at check time: to the higher of the two
        first = (
            first.unionByName(now).groupBy("topic", "partition").agg(F.max("start").alias("start"))
        )
    samples = samples.unionByName(first.withColumn("ts_ms", F.lit(None).cast("long")))
    # the log's own start comes last: a null time sorts after every sample's
    in_time = Window.partitionBy("topic", "partition").orderBy(F.asc_nulls_last("ts_ms"))
    before = in_time.rowsBetween(Window.unboundedPreceding, -1)
    moved = samples.select(
        "topic",
        "partition",
        F.coalesce(F.max("start").over(before), F.lit(0)).alias("log_start_from"),
        F.col("start").alias("log_start_to"),
        F.col("ts_ms").alias("deleted_ts_ms"),
        F.lag("ts_ms").over(in_time).alias("seen_ts_ms"),
    )
    return moved.filter(F.col("log_start_to") > F.col("log_start_from"))


def passed_by_log_start(inputs: DataFrame, starts: DataFrame) -> DataFrame:
    """``inputs`` with the movement of their partition's log start that passed each one (its
    columns null where none did). The movements are few: they are broadcast."""
    starts = starts.withColumnRenamed("topic", "_topic").withColumnRenamed("partition", "_part")
    passed = (
        (F.col("in_topic") == F.col("_topic"))
        & (F.col("in_partition") == F.col("_part"))
        & (F.col("in_offset") >= F.col("log_start_from"))
        & (F.col("in_offset") < F.col("log_start_to"))
    )
    return inputs.join(F.broadcast(starts), passed, "left").drop("_topic", "_part")


def deleted_before_commits(candidates: DataFrame, commits: DataFrame) -> DataFrame:
    """The inputs the log start passed before any commit did: each one's first commit past it
    (``committed_past_ts_ms``, null when none) came after the last lag sample that still showed
    it in the log (``seen_ts_ms``), or there is none of either.

    The deletion is known to within one lag sample: a commit between the last sample that
    showed the input in the log and the first that showed it gone counts as after it.
    """
    done = commits.select(
        F.col("topic").alias("_topic"),
        F.col("partition").alias("_part"),
        F.col("offset").alias("_offset"),
        F.coalesce("commit_ts_ms", "log_ts_ms").alias("_ts"),
    )
    past = (
        (F.col("in_topic") == F.col("_topic"))
        & (F.col("in_partition") == F.col("_part"))
        & (F.col("_offset") > F.col("in_offset"))
    )
    columns = ["event_id", "key", "seq", "in_partition", "in_offset", "ack_ts"]
    judged = (
        candidates.join(F.broadcast(done), past, "left")
        .groupBy(*columns, *MOVEMENT_COLUMNS)
        .agg(F.min("_ts").alias("committed_past_ts_ms"))
    )
    first = (
        F.col("committed_past_ts_ms").isNull()
        | F.col("seen_ts_ms").isNull()
        | (F.col("committed_past_ts_ms") > F.col("seen_ts_ms"))
    )
    return judged.filter(first).select(*columns, *MOVEMENT_COLUMNS, "committed_past_ts_ms")
