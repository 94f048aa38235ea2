"""The matching: every input beside what became of it, the one shuffle every check makes.

What a check reads (:class:`CheckInputs`) is matched by ``event_id`` once (:func:`match`), and
every anomaly about records is a query of that table (``checker.views``), so the history, the
output and the input log are read, parsed and shuffled once, not once per anomaly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F


@dataclass
class CheckInputs:
    acks: DataFrame  # acknowledged_inputs(): one row per ack, an event_id may repeat
    committed: DataFrame  # output, read_committed (or files)
    offsets: DataFrame  # the "offsets" stream
    reports: DataFrame  # the "app-*" streams
    lag: DataFrame  # the "lag" stream
    uncommitted: DataFrame | None = None  # output, read_uncommitted (Kafka outputs only)
    source: DataFrame | None = None  # the input topic's log (sources.kafka_log), if it was read
    #: Output partitions an open transaction still held when the output was read: each one's
    #: last stable offset, where a read_committed read stops (see ``behind_open_transaction``).
    held: Mapping[int, int] | None = None
    #: Output records of inputs that belong in another output (see ``check.Expected``).
    misrouted: DataFrame | None = None
    #: Where each input partition's log starts, asked after the input log was read:
    #: ``(topic, partition, start)`` rows (see ``deleted_by_retention``).
    log_starts: Callable[[], list[tuple[str, int, int]]] | None = None
    #: ``source`` is the inputs' copy on a mirror cluster (see ``not_mirrored``).
    source_mirrored: bool = False
    #: A state's rows held wrong (:func:`~kafka_replay.checker.final_state.held_wrong`): a
    #: ``[sink]`` with a key column, judged by each key's last input.
    state: DataFrame | None = None


#: Which stream a row of the matching came from (the anomalies' SQL texts say ``side = 0`` and
#: so on).
ACK_SIDE, OUT_SIDE, LOG_SIDE = 0, 1, 2
_ACK_FIELDS = ("key", "seq", "in_topic", "in_partition", "in_offset", "ack_ts", "superseded")
_OUT_FIELDS = ("out_partition", "out_offset", "out_ts_ms")
_LOG_FIELDS = ("in_partition", "in_offset", "key", "seq", "in_topic")  # a log record's own


def match(inputs: CheckInputs) -> DataFrame:
    """Every output record beside the input it delivers, every input never delivered, and
    every record of the input log when it was read.

    One shuffle by ``event_id`` of the acks, the output (and the input log) together does
    what a join per anomaly did: it keeps one ack per ``event_id`` (the first read), counts
    each input's deliveries and its copies in the log, and marks its first delivery by output
    position and its first copy by log position. A null ``event_id`` matches nothing, as in
    a join.

    Columns: ``event_id``, ``side`` (``OUT_SIDE``: an output record, ``ACK_SIDE``: an input never
    delivered, ``LOG_SIDE``: a record of the input log), the ack's fields (null when none matched;
    a log record's own ``key``, ``seq``, ``in_partition`` and ``in_offset``), the output's
    fields (null for an input), ``deliveries``, ``copies`` (in the log; null when it was not
    read), ``first`` (the first delivery, or the first copy, by position), ``acked`` (its
    ``event_id`` is an ack's) and ``known`` (an ack's or the log's).
    """
    position = F.monotonically_increasing_id().alias("n")  # one of equal rows, in read order
    nothing = F.lit(None)
    acks = inputs.acks.select(
        "event_id",
        F.lit(ACK_SIDE).alias("side"),
        F.struct(position, *_ACK_FIELDS).alias("ack"),
        nothing.alias("out"),
    )
    outputs = inputs.committed.select(
        "event_id",
        F.lit(OUT_SIDE).alias("side"),
        nothing.alias("ack"),
        F.struct(*_OUT_FIELDS[:2], position, _OUT_FIELDS[2]).alias("out"),
    )
    rows = acks.unionByName(outputs, allowMissingColumns=True)
    same_id = Window.partitionBy("event_id")
    has_id = F.col("event_id").isNotNull()
    side = F.col("side")
    logged: list[Column | str] = []  # what only the input log's rows give
    copies = F.lit(None).cast("long")
    if inputs.source is not None:
        log = inputs.source.select(
            "event_id",
            F.lit(LOG_SIDE).alias("side"),
            F.struct(
                F.col("partition").alias("in_partition"),
                F.col("offset").alias("in_offset"),
                "key",
                "seq",
                F.col("topic").alias("in_topic"),
            ).alias("log"),
        )
        rows = rows.unionByName(log, allowMissingColumns=True)
        copies = F.when(has_id, F.sum((side == LOG_SIDE).cast("long")).over(same_id))
        logged = [
            "log",
            F.min(F.when(side == LOG_SIDE, F.struct(*(f"log.{n}" for n in _LOG_FIELDS[:2]))))
            .over(same_id)
            .alias("first_copy"),
        ]
    chosen = F.min(F.when(side == ACK_SIDE, F.col("ack"))).over(same_id)
    first = F.min(F.when(side == OUT_SIDE, F.col("out"))).over(same_id)
    deliveries = F.sum((side == OUT_SIDE).cast("long")).over(same_id)
    grouped = rows.select(
        "event_id",
        "side",
        "ack",
        "out",
        chosen.alias("chosen"),
        F.when(has_id, deliveries).otherwise(0).alias("deliveries"),
        copies.alias("copies"),
        (F.col("out.n") == first["n"]).alias("first"),
        *logged,
    )
    acked = has_id & F.col("chosen").isNotNull()
    undelivered = (side == ACK_SIDE) & (F.col("ack.n") == F.col("chosen.n"))
    kept = (side == OUT_SIDE) | (undelivered & (F.col("deliveries") == 0))
    first_of = F.col("first")
    if logged:
        kept |= side == LOG_SIDE
        first_of = F.when(
            side == LOG_SIDE,
            (F.col("log.in_partition") == F.col("first_copy.in_partition"))
            & (F.col("log.in_offset") == F.col("first_copy.in_offset")),
        ).otherwise(first_of)

    def field(name: str) -> Column:
        """The ack's field: a missing input's own, an output's input's, a log record's own."""
        value = F.when(side == ACK_SIDE, F.col(f"ack.{name}"))
        if logged:
            value = value.when(
                side == LOG_SIDE, F.col(f"log.{name}") if name in _LOG_FIELDS else None
            )
        return value.when(acked, F.col(f"chosen.{name}")).alias(name)

    return grouped.filter(kept).select(
        "event_id",
        "side",
        *(field(name) for name in _ACK_FIELDS),
        *(F.col(f"out.{name}").alias(name) for name in _OUT_FIELDS),
        "deliveries",
        "copies",
        F.coalesce(first_of, F.lit(False)).alias("first"),
        acked.alias("acked"),
        (acked | (has_id & F.coalesce(F.col("copies") > 0, F.lit(False)))).alias("known"),
    )


def unlogged() -> Column:
    """An input the input log holds no copy of: a write the brokers lost (null: not read)."""
    return F.col("copies") == 0
