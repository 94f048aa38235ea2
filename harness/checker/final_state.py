"""A service's state judged by its final value of each key, not by every record it read.

A service that keeps each key's latest value (a cache, a table fed from a compacted topic, one
row per key) is right when it holds, for every key, the key's last acknowledged input, and
nothing where that input deleted the key (a tombstone). What it held on the way is not judged,
so the records a topic's cleaner compacted away, superseded by a later one of their key, were
never its to hold: only each key's last input is expected, and only it can be lost.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

#: What :func:`held_wrong` says of each row held wrong (the ``stale_value`` and
#: ``resurrected_key`` anomalies' columns).
WRONG_COLUMNS = (
    "key",
    "event_id",
    "held_seq",
    "last_event_id",
    "last_seq",
    "in_partition",
    "in_offset",
)


def superseded_in(acks: DataFrame, topics: list[str]) -> DataFrame:
    """``acks`` with ``superseded`` true for each input of ``topics`` (compacted ones) that a
    later acknowledged input of its key in its partition follows: what their cleaners may
    remove by design."""
    later = Window.partitionBy("in_topic", "in_partition", "key").orderBy("in_offset")
    followed = F.lead("in_offset").over(later).isNotNull() & F.col("in_topic").isin(topics)
    return acks.withColumn("superseded", F.coalesce(followed, F.lit(False)))


def last_inputs(acks: DataFrame) -> DataFrame:
    """Each key's last acknowledged input of each input topic: the latest acknowledged, then
    the highest offset (a key's records share a partition, acknowledged in offset order)."""
    latest = Window.partitionBy("in_topic", "key").orderBy(F.desc("ack_ts"), F.desc("in_offset"))
    ranked = acks.filter(F.col("key").isNotNull()).withColumn("_rank", F.row_number().over(latest))
    return ranked.filter(F.col("_rank") == 1).drop("_rank")


def held_wrong(rows: DataFrame, acks: DataFrame, last: DataFrame) -> DataFrame:
    """Each row (``key``, ``event_id``) whose key's last input is another one, or a delete:
    the row's input and ``held_seq``, the key's last input (``last_event_id``, ``last_seq``,
    ``deleted``, its position)."""
    ends = last.select(
        "key",
        F.col("event_id").alias("last_event_id"),
        F.col("seq").alias("last_seq"),
        F.col("delete").alias("deleted"),
        "in_partition",
        "in_offset",
    )
    seqs = acks.select("event_id", F.col("seq").alias("held_seq")).dropDuplicates(["event_id"])
    state = rows.select("key", "event_id").join(ends, "key").join(seqs, "event_id", "left")
    wrong = F.col("deleted") | ~F.col("event_id").eqNullSafe(F.col("last_event_id"))
    return state.filter(wrong).select(*WRONG_COLUMNS, "deleted")


def judge_state(acks: DataFrame, rows: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """``(expected, kept, wrong)``: the inputs the state should hold (each key's last input,
    unless it is a delete or the key is held wrong: :func:`held_wrong` accounts for those),
    the rows judged as outputs (held right, or of a key no input has: ``unexpected`` when of
    no input), and the rows held wrong."""
    last = last_inputs(acks)
    wrong = held_wrong(rows, acks, last)
    keys = wrong.select("key").distinct()
    expected = last.filter(~F.col("delete")).join(keys, "key", "left_anti")
    return expected, rows.join(keys, "key", "left_anti"), wrong
