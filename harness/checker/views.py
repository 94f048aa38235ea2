"""The views every anomaly query reads, each computed once per check: the matching,
checkpointed, and what follows from it (the outputs, the input log, where its log start moved,
what was never delivered), by name as SQL texts (:meth:`AnalysisViews.sql`).

A SQL text is analysed by Spark in one call, where a chain of DataFrame steps costs a call
into the JVM per step.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import fields, replace
from functools import cached_property
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .log_starts import (
    MOVEMENT_COLUMNS,
    MOVEMENTS_SCHEMA,
    deleted_before_commits,
    log_start_movements,
    passed_by_log_start,
)
from .matching import ACK_SIDE, LOG_SIDE, OUT_SIDE, CheckInputs, match, unlogged


class PlannedOnMovements(cached_property):  # type: ignore[type-arg]
    """A view planned from whether an input partition's log start moved
    (:attr:`AnalysisViews.moved`): planned again when movements are found after all
    (:meth:`AnalysisViews.found_movements`), so no view is left planned without them."""


class AnalysisViews:
    """What the anomaly queries share, each part computed once per check.

    Everything about records comes from one checkpointed :func:`match`, so the history, the
    output and the input log are read, parsed and shuffled once, not once per anomaly:
    :meth:`close` frees it. :class:`~kafka_replay.checker.analysis.Analysis` counts the
    anomalies over these views.
    """

    def __init__(
        self, inputs: CheckInputs, examples: int, ordered: bool = True, small: bool = False
    ) -> None:
        #: An incident's few thousand records: every input is read as one partition
        #: (:func:`in_one_partition`), and so is the counting union.
        self.small = small
        self.inputs = in_one_partition(inputs) if small else inputs
        self.examples = examples
        #: Whether the input log was read: without it, the anomalies about it are not looked for.
        self.source_read = inputs.source is not None
        #: Whether the outputs have an order (a topic's offsets; a table's rows have none).
        self.ordered = ordered
        #: Whether an input partition's log start moved during the run (retention deleted
        #: records): None until :meth:`~kafka_replay.checker.analysis.Analysis.findings`
        #: knows; most runs' never did.
        self.moved: bool | None = None
        self._table: str | None = None  # the matching's cached table, on a large run

    @cached_property
    def matched(self) -> DataFrame:
        """The matching, computed once: every query after it starts from its rows, not from
        the plan that made them. That plan Spark would analyse again for each query
        (zombie-commit's run: 6.9 s instead of 7.6 s a check, warm, alternating in one
        session), and its reads would run again under every query that missed a cache.

        On a small run it is checkpointed, its rows kept in the plan itself. On a large run
        it is cached as a table of columns in memory, filled by one job, which the SQL texts
        read by name (:attr:`views`) and the frames made from this one find: scans read only
        the columns a query needs (10M inputs: 150 s a check, against 195 s with a checkpoint
        beneath the table and 288 s scanning a checkpoint's whole rows). A cache is not found
        under a frame handed to ``spark.sql`` (:meth:`sql`), so what is handed over as a frame
        starts from :attr:`_matched_rows`.
        """
        matched = match(self.inputs)
        if self.small:  # a checkpoint's scan does not always keep its plan's one partition
            return matched.localCheckpoint().coalesce(1)
        spark = matched.sparkSession
        self._table = f"kafka_replay_matched_{uuid.uuid4().hex}"
        matched.createOrReplaceTempView(self._table)
        spark.sql(f"CACHE TABLE {self._table}")  # eager: the one job that matches
        return spark.table(self._table)

    @cached_property
    def _matched_rows(self) -> DataFrame:
        """The matching with its rows in its plan, for the frames :meth:`sql` hands to Spark as
        frames (under which a cache is not found): on a large run a checkpoint of the cached
        table, made only where a log start moved or a transaction held the output."""
        return self.matched if self.small else self.matched.localCheckpoint()

    @cached_property
    def commits(self) -> DataFrame:
        return self.inputs.offsets.filter(F.col("kind") == "commit")

    @cached_property
    def outputs(self) -> DataFrame:
        """Every output record (``known`` and ``acked`` say what it matched)."""
        return self.matched.filter(F.col("side") == OUT_SIDE)

    @cached_property
    def delivered(self) -> DataFrame:
        """Known inputs only, one row per delivery."""
        return self.outputs.filter(F.col("acked"))

    @cached_property
    def log(self) -> DataFrame:
        """Every record of the input log (``in_partition``, ``in_offset``: its position)."""
        return self.matched.filter(F.col("side") == LOG_SIDE)

    @property
    def log_start_moves(self) -> DataFrame | None:
        """Each movement of an input partition's log start (:func:`log_start_movements`),
        computed once into a few rows; None while no movement is known (:attr:`moved`): what
        depends on it is then planned without it (a hand-made history's check: 9.2 s instead of
        15.2 s)."""
        return self._moves if self.moved else None

    @cached_property
    def _moves(self) -> DataFrame:
        moves = log_start_movements(self.inputs.lag, self.log, self._starts_now_frame()).collect()
        return self._rows(moves, MOVEMENTS_SCHEMA)

    @cached_property
    def starts_now(self) -> list[tuple[str, int, int]] | None:
        """Where the input log starts now, asked once it was read (a record the read missed
        below it was deleted from the log's start, not lost by a broker): ``(topic,
        partition, start)`` rows, None when not asked."""
        if self.inputs.log_starts is None:
            return None
        self.matched  # noqa: B018 (the log is read as the matching is computed)
        return self.inputs.log_starts()

    def _starts_now_frame(self) -> DataFrame | None:
        if self.starts_now is None:
            return None
        return self._rows(self.starts_now, "topic string, partition int, start long")

    def _rows(self, rows: list[Any], schema: Any) -> DataFrame:
        """A few rows the driver holds as a frame; one partition on a small run, as the inputs."""
        frame = self.matched.sparkSession.createDataFrame(rows, schema)
        return frame.coalesce(1) if self.small else frame

    @PlannedOnMovements
    def retention(self) -> DataFrame:
        """Every acknowledged input (a never delivered one, or an input's first delivery), with
        the movement of its partition's log start that passed it, if one did
        (:func:`passed_by_log_start`): ``deleted_ts_ms``, ``seen_ts_ms``, ``log_start_from``,
        ``log_start_to``."""
        side = F.col("side")
        acked_input = (side == ACK_SIDE) | ((side == OUT_SIDE) & F.col("acked") & F.col("first"))
        acked = self._matched_rows.filter(acked_input)
        if self.log_start_moves is None:
            return acked.select("*", *(F.lit(None).cast("long").alias(c) for c in MOVEMENT_COLUMNS))
        return passed_by_log_start(acked, self.log_start_moves)

    @PlannedOnMovements
    def deleted(self) -> DataFrame:
        """Inputs never delivered that the log start passed (retention deleted them) before any
        commit passed them, with when and how far the log start moved (``deleted_by_retention``).
        """
        candidates = self.retention.filter(
            (F.col("side") == ACK_SIDE)
            & F.col("log_start_to").isNotNull()
            & ~F.coalesce(F.col("superseded"), F.lit(False))  # a compacted log's gaps are its own
        )
        deleted = deleted_before_commits(candidates, self.commits)
        return deleted if self.log_start_moves is not None else deleted.limit(0)

    @PlannedOnMovements
    def undelivered(self) -> tuple[DataFrame, DataFrame]:
        """(undelivered, behind an open transaction): inputs the input log holds (or held when a
        commit passed them) that no output read with read_committed delivers, and those of them
        whose output sits behind an open transaction (a read_committed read cannot reach it yet).

        A write the brokers lost is neither: the app could never read it (``lost_write``); nor is
        an input retention deleted before the group passed it (``deleted_by_retention``), nor
        one a compacted log's cleaner removed (``removed_by_compaction``).
        """
        gone = F.coalesce(unlogged(), F.lit(False))
        # lost by the brokers, or removed by a compacted log's cleaner: none the app's to read
        brokers_lost = gone & (F.col("log_start_to").isNull() | F.col("superseded"))
        undelivered = self.retention.filter((F.col("side") == ACK_SIDE) & ~brokers_lost)
        if self.log_start_moves is not None:
            deleted = F.broadcast(self.deleted.select("event_id"))
            undelivered = undelivered.join(deleted, "event_id", "left_anti")
        undelivered = undelivered.select(*self.matched.columns)
        pending = _behind_open_transaction(self.inputs.uncommitted, self.inputs.held)
        if pending is None:
            return undelivered, undelivered.limit(0)
        return (
            undelivered.join(pending, "event_id", "left_anti"),
            undelivered.join(pending, "event_id", "left_semi"),
        )

    @PlannedOnMovements
    def views(self) -> dict[str, DataFrame | str]:
        """What the anomalies' SQL texts read, by name (:meth:`sql`): the inputs' frames, and
        views of them as SQL texts. Where a log start moved or an open transaction holds the
        output (rare), ``retention`` and ``undelivered`` are the frames that say so."""
        inputs = self.inputs
        frames = {
            "matched": self.matched,
            "offsets": inputs.offsets,
            "lag": inputs.lag,
            "reports": inputs.reports,
            "committed": inputs.committed,
            "uncommitted": inputs.uncommitted,
            "misrouted": inputs.misrouted,
            "state": inputs.state,
        }
        views: dict[str, DataFrame | str] = {n: f for n, f in frames.items() if f is not None}
        if self._table is not None:  # a cached table is found by its name, not through a frame
            views["matched"] = f"SELECT * FROM {self._table}"
        views |= _VIEWS
        if self.log_start_moves is not None:
            views["retention"] = self.retention
        if self.log_start_moves is not None or self.held:
            views["undelivered"] = self.undelivered[0]
        return views

    def found_movements(self) -> None:
        """A log start moved after all: the views planned without movements are planned again
        as they are next read."""
        self.moved = True
        for name, attr in vars(AnalysisViews).items():
            if isinstance(attr, PlannedOnMovements):
                self.__dict__.pop(name, None)

    @property
    def held(self) -> bool:
        """Whether an open transaction held an output partition when the output was read."""
        return bool(self.inputs.held) and self.inputs.uncommitted is not None

    def sql(self, text: str, **more: DataFrame) -> DataFrame:
        """A SQL text over :attr:`views` (and ``more``): ``{name}`` is the view of that name."""
        frames = {n: v for n, v in self.views.items() if isinstance(v, DataFrame)} | more
        texts = {n: f"({v})" for n, v in self.views.items() if isinstance(v, str)}
        kept = {name: "{" + name + "}" for name in frames}
        while any("{" + name + "}" in text for name in texts):  # views of views
            text = text.format(**texts, **kept)
        return self.matched.sparkSession.sql(text, **frames)

    def frame(self, query: DataFrame | str) -> DataFrame:
        return self.sql(query) if isinstance(query, str) else query

    def deliveries(self) -> DataFrame:
        """Each output record matched to its input, in output time."""
        return self.delivered.select(
            "event_id", "in_partition", "in_offset", "out_partition", "out_offset", "out_ts_ms"
        ).orderBy("out_ts_ms", "out_partition", "out_offset")

    def close(self) -> None:
        if self._table is not None:
            self.matched.sparkSession.sql(f"UNCACHE TABLE IF EXISTS {self._table}")
            self.matched.sparkSession.catalog.dropTempView(self._table)
        for name in ("matched", "_matched_rows"):  # a checkpoint's rows go once unreferenced
            if name in self.__dict__:
                self.__dict__[name].unpersist()


#: Views every check has, as SQL texts (:meth:`AnalysisViews.sql`); ``retention`` and
#: ``undelivered`` are these only where no log start moved and no transaction held the output.
_VIEWS = {
    "commits": "SELECT * FROM {offsets} WHERE kind = 'commit'",
    # every acknowledged input (a never delivered one, or an input's first delivery), with the
    # movement of its partition's log start that passed it (none moved: null)
    "retention": """
        SELECT *, CAST(NULL AS BIGINT) AS deleted_ts_ms, CAST(NULL AS BIGINT) AS seen_ts_ms,
            CAST(NULL AS BIGINT) AS log_start_from, CAST(NULL AS BIGINT) AS log_start_to
        FROM {matched} WHERE side = 0 OR (side = 1 AND acked AND first)""",
    # never delivered, although the input log holds it (null: not read)
    "undelivered": "SELECT * FROM {retention} WHERE side = 0 AND NOT coalesce(copies = 0, false)",
    # each input partition's highest commit
    "progress": """
        SELECT topic AS in_topic, partition AS in_partition, max(offset) AS max_committed
        FROM {commits} GROUP BY topic, partition""",
    # what is undelivered, and whether a commit passed it
    "missing": """
        SELECT u.event_id, u.key, u.seq, u.in_partition, u.in_offset, p.max_committed, u.ack_ts,
            p.max_committed IS NOT NULL AND u.in_offset < p.max_committed AS passed
        FROM {undelivered} u LEFT JOIN {progress} p
            ON u.in_topic = p.in_topic AND u.in_partition = p.in_partition""",
}


def in_one_partition(inputs: CheckInputs) -> CheckInputs:
    """Every frame of ``inputs`` read as one partition: on an incident's few thousand records
    each query's windows, joins and groupings then need no shuffle (Spark's single partition
    meets any of their distributions), so a check's jobs run a stage or two each, not one per
    join or window (zombie-commit's recorded check: 2 stages instead of 16)."""
    return replace(
        inputs,
        **{
            field.name: frame.coalesce(1)
            for field in fields(inputs)
            if isinstance(frame := getattr(inputs, field.name), DataFrame)
        },
    )


def _behind_open_transaction(
    uncommitted: DataFrame | None, held: Mapping[int, int] | None
) -> DataFrame | None:
    """The ``event_id`` of every output record at or past a held partition's last stable offset
    (None when no partition is held)."""
    if uncommitted is None or not held:
        return None
    behind = F.lit(False)
    for partition, lso in held.items():
        behind |= (F.col("out_partition") == partition) & (F.col("out_offset") >= lso)
    return uncommitted.filter(behind & F.col("event_id").isNotNull()).select("event_id").distinct()
