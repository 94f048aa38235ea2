"""A large capture window read by Spark's Kafka source: every partition in parallel.

One consumer reads some tens of thousands of records a second; Spark reads each partition's
offset range in its own task, sorts the window by (timestamp, partition, offset) across its
executors and hands it to the driver a partition at a time (``toLocalIterator``), so the
window never has to fit in memory here. The session is the checker's
(:func:`kafka_replay.checker.spark.spark_session`): the one already running in this process,
else a new one that is stopped afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from .capture_file import CapturedRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Per partition, the offsets ``[first, end)`` to read.
Offsets = Mapping[int, tuple[int, int]]


def read_with_spark(
    bootstrap: str,
    topic: str,
    offsets: Offsets,
    start_ms: int,
    end_ms: int,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 10_000,
) -> Iterator[CapturedRecord]:
    """The window's records in time order, streamed from Spark as they are sorted."""
    from pyspark.sql import SparkSession

    from kafka_replay.checker.spark import spark_session

    spark = SparkSession.getActiveSession()
    own = spark is None
    if spark is None:
        spark = spark_session(app_name="kafka-replay-capture")
    try:
        rows = _window_frame(spark, bootstrap, topic, offsets, start_ms, end_ms)
        for seen, row in enumerate(rows.toLocalIterator(prefetchPartitions=True), 1):
            yield CapturedRecord(
                row["partition"],
                row["offset"],
                row["ts_ms"],
                None if row["key"] is None else bytes(row["key"]),
                None if row["value"] is None else bytes(row["value"]),
                tuple(
                    (h["key"], None if h["value"] is None else bytes(h["value"]))
                    for h in row["headers"] or ()
                ),
            )
            if progress is not None and seen % progress_every == 0:
                progress(seen)
    finally:
        if own:
            spark.stop()


def _window_frame(
    spark: SparkSession, bootstrap: str, topic: str, offsets: Offsets, start_ms: int, end_ms: int
) -> DataFrame:
    """The window as a sorted frame: the offset ranges, read committed, less the records whose
    timestamps lie outside the window (a producer may stamp records out of order)."""
    from pyspark.sql import functions as F

    firsts = {str(p): first for p, (first, _) in offsets.items()}
    ends = {str(p): end for p, (_, end) in offsets.items()}
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("assign", json.dumps({topic: sorted(offsets)}))
        .option("startingOffsets", json.dumps({topic: firsts}))
        .option("endingOffsets", json.dumps({topic: ends}))
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    ts_ms = F.unix_millis("timestamp")
    return (
        frame.select("partition", "offset", ts_ms.alias("ts_ms"), "key", "value", "headers")
        .where((ts_ms >= start_ms) & (ts_ms < end_ms))
        .orderBy("ts_ms", "partition", "offset")
    )
