"""What happened to every record: each anomaly as a Spark query over the run's data.

Each anomaly is one function registered with ``@anomaly`` (its name, how its examples are
ordered, and a docstring whose first line describes it) that returns its query, most as one
SQL text over the check's views (:meth:`Analysis.sql`): a text is analysed by Spark in one
call, where a chain of DataFrame steps costs a call into the JVM per step, and the same text
is both counted (every anomaly in one job) and, where it found something, read for examples.
:func:`analyse` runs them all, and reports list them in :data:`ANOMALIES` order.
``docs/checker.md`` describes each one, and a test keeps the two in step.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

#: The places a correct service puts an input in (the mark on its ack): once on the output,
#: in the dead-letter topic, or nowhere.
PLACES = ("output", "dead_letter", "filtered")


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


@dataclass
class Finding:
    count: int
    examples: list[dict[str, Any]]
    detail: dict[str, Any] | None = None


@dataclass(frozen=True)
class Detailed:
    """An anomaly whose finding says more than its count and examples: its rows are counted
    with the others (:meth:`Analysis.findings`), and only when it has some does ``detail``
    make its finding from them and their count."""

    frame: DataFrame | str  # a SQL text over the analysis' views (:meth:`Analysis.sql`)
    detail: Callable[[DataFrame, int], Finding]
    none: Finding  # what it says when it found nothing


def _rows(frame: DataFrame, limit: int) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in frame.limit(limit).collect()]


def _union_counts(queries: Mapping[str, str], small: bool) -> str:
    """One SQL text that counts the rows of every query, by name: a union of their names,
    grouped, so every anomaly is counted by one Spark job. Anomalies that split one view's
    rows between them (:data:`_COUNTED_TOGETHER`) are counted from it in one branch.

    On a ``small`` run the union is read as one partition (``COALESCE(1)``): each branch is
    a task otherwise, and on an incident's records scheduling them cost more than running
    them (zombie-commit's counting job: 140 to 250 ms instead of 330 to 390, side by side),
    and one partition needs no shuffle before the grouping. Millions of records keep their
    partitions."""
    branches, queries = [], dict(queries)
    for names, named in _COUNTED_TOGETHER.items():
        if all(name in queries for name in names):
            branches.append(named)
            for name in names:
                del queries[name]
    branches += (f"SELECT '{n}' AS name FROM ({q})" for n, q in queries.items())
    union = " UNION ALL ".join(branches)
    if small:
        union = f"SELECT /*+ COALESCE(1) */ * FROM ({union})"
    return f"SELECT name, count(*) AS count FROM ({union}) GROUP BY name"


#: What :func:`_passed` adds to an input: the movement of the log start that passed it.
_MOVED = ("deleted_ts_ms", "seen_ts_ms", "log_start_from", "log_start_to")
#: :func:`_log_starts`' rows.
_MOVES = (
    "topic string, partition int, log_start_from long, log_start_to long, "
    "deleted_ts_ms long, seen_ts_ms long"
)

# Which stream a row of the matching came from (the SQL texts below say `side = 0` and so on).
_ACK, _OUT, _LOG = 0, 1, 2
_ACK_FIELDS = ("key", "seq", "in_topic", "in_partition", "in_offset", "ack_ts")
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

    Columns: ``event_id``, ``side`` (``_OUT``: an output record, ``_ACK``: an input never
    delivered, ``_LOG``: a record of the input log), the ack's fields (null when none matched;
    a log record's own ``key``, ``seq``, ``in_partition`` and ``in_offset``), the output's
    fields (null for an input), ``deliveries``, ``copies`` (in the log; null when it was not
    read), ``first`` (the first delivery, or the first copy, by position), ``acked`` (its
    ``event_id`` is an ack's) and ``known`` (an ack's or the log's).
    """
    position = F.monotonically_increasing_id().alias("n")  # one of equal rows, in read order
    nothing = F.lit(None)
    acks = inputs.acks.select(
        "event_id",
        F.lit(_ACK).alias("side"),
        F.struct(position, *_ACK_FIELDS).alias("ack"),
        nothing.alias("out"),
    )
    outputs = inputs.committed.select(
        "event_id",
        F.lit(_OUT).alias("side"),
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
            F.lit(_LOG).alias("side"),
            F.struct(
                F.col("partition").alias("in_partition"),
                F.col("offset").alias("in_offset"),
                "key",
                "seq",
                F.col("topic").alias("in_topic"),
            ).alias("log"),
        )
        rows = rows.unionByName(log, allowMissingColumns=True)
        copies = F.when(has_id, F.sum((side == _LOG).cast("long")).over(same_id))
        logged = [
            "log",
            F.min(F.when(side == _LOG, F.struct(*(f"log.{n}" for n in _LOG_FIELDS[:2]))))
            .over(same_id)
            .alias("first_copy"),
        ]
    chosen = F.min(F.when(side == _ACK, F.col("ack"))).over(same_id)
    first = F.min(F.when(side == _OUT, F.col("out"))).over(same_id)
    deliveries = F.sum((side == _OUT).cast("long")).over(same_id)
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
    undelivered = (side == _ACK) & (F.col("ack.n") == F.col("chosen.n"))
    kept = (side == _OUT) | (undelivered & (F.col("deliveries") == 0))
    first_of = F.col("first")
    if logged:
        kept |= side == _LOG
        first_of = F.when(
            side == _LOG,
            (F.col("log.in_partition") == F.col("first_copy.in_partition"))
            & (F.col("log.in_offset") == F.col("first_copy.in_offset")),
        ).otherwise(first_of)

    def field(name: str) -> Column:
        """The ack's field: a missing input's own, an output's input's, a log record's own."""
        value = F.when(side == _ACK, F.col(f"ack.{name}"))
        if logged:
            value = value.when(side == _LOG, F.col(f"log.{name}") if name in _LOG_FIELDS else None)
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


def _unlogged() -> Column:
    """An input the input log holds no copy of: a write the brokers lost (null: not read)."""
    return F.col("copies") == 0


class Analysis:
    """What the anomaly queries share, each part computed once per check.

    Everything about records comes from one checkpointed :func:`match`, so the history, the
    output and the input log are read, parsed and shuffled once, not once per anomaly:
    :meth:`close` frees it.
    """

    def __init__(
        self, inputs: CheckInputs, examples: int, ordered: bool = True, small: bool = False
    ) -> None:
        self.inputs, self.examples = inputs, examples
        #: Whether the input log was read: without it, the anomalies about it are not looked for.
        self.source_read = inputs.source is not None
        #: Whether the outputs have an order (a topic's offsets; a table's rows have none).
        self.ordered = ordered
        #: An incident's few thousand records: the counting union is read as one partition.
        self.small = small
        #: Whether an input partition's log start moved during the run (retention deleted
        #: records): None until :meth:`findings` knows; most runs' never did.
        self.moved: bool | None = None
        self._totals: dict[str, int] | None = None  # counted by :meth:`findings`
        self._table: str | None = None  # the matching's cached table, on a large run

    @cached_property
    def matched(self) -> DataFrame:
        """The matching, computed once and checkpointed: every query after it starts from a
        scan of its rows, not from the plan that made them. That plan Spark would analyse again
        for each query (zombie-commit's run: 6.9 s instead of 7.6 s a check, warm, alternating
        in one session), and a cache of it is not found under the anomalies' SQL texts, which
        then read and matched the sources again in every branch (1M inputs: 33 s a check
        instead of 110 to 131 s).

        On a large run the checkpoint is also cached as a table of columns in memory, which
        the SQL texts read by name (:attr:`views`): a checkpoint's scan reads whole rows, the
        table only the columns a query needs (10M inputs: 180 s a check instead of 288 s; the
        anomalies made as frames still scan the checkpoint)."""
        matched = match(self.inputs).localCheckpoint()
        if not self.small:
            self._table = f"kafka_replay_matched_{uuid.uuid4().hex}"
            matched.createOrReplaceTempView(self._table)
            matched.sparkSession.sql(f"CACHE TABLE {self._table}")
        return matched

    @cached_property
    def commits(self) -> DataFrame:
        return self.inputs.offsets.filter(F.col("kind") == "commit")

    @cached_property
    def outputs(self) -> DataFrame:
        """Every output record (``known`` and ``acked`` say what it matched)."""
        return self.matched.filter(F.col("side") == _OUT)

    @cached_property
    def delivered(self) -> DataFrame:
        """Known inputs only, one row per delivery."""
        return self.outputs.filter(F.col("acked"))

    @cached_property
    def log(self) -> DataFrame:
        """Every record of the input log (``in_partition``, ``in_offset``: its position)."""
        return self.matched.filter(F.col("side") == _LOG)

    @property
    def log_start_moves(self) -> DataFrame | None:
        """Each movement of an input partition's log start (:func:`_log_starts`), computed once
        into a few rows; None while no movement is known (:attr:`moved`): what depends on it
        is then planned without it (a hand-made history's check: 9.2 s instead of 15.2 s)."""
        return self._moves if self.moved else None

    @cached_property
    def _moves(self) -> DataFrame:
        moves = _log_starts(self.inputs.lag, self.log, self._starts_now_frame()).collect()
        return self.matched.sparkSession.createDataFrame(moves, _MOVES)

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
        return self.matched.sparkSession.createDataFrame(
            self.starts_now, "topic string, partition int, start long"
        )

    @cached_property
    def retention(self) -> DataFrame:
        """Every acknowledged input (a never delivered one, or an input's first delivery), with
        the movement of its partition's log start that passed it, if one did (:func:`_passed`):
        ``deleted_ts_ms``, ``seen_ts_ms``, ``log_start_from``, ``log_start_to``."""
        side = F.col("side")
        acked_input = (side == _ACK) | ((side == _OUT) & F.col("acked") & F.col("first"))
        acked = self.matched.filter(acked_input)
        if self.log_start_moves is None:
            return acked.select("*", *(F.lit(None).cast("long").alias(c) for c in _MOVED))
        return _passed(acked, self.log_start_moves)

    @cached_property
    def deleted(self) -> DataFrame:
        """Inputs never delivered that the log start passed (retention deleted them) before any
        commit passed them, with when and how far the log start moved (``deleted_by_retention``).
        """
        candidates = self.retention.filter(
            (F.col("side") == _ACK) & F.col("log_start_to").isNotNull()
        )
        deleted = _deleted_first(candidates, self.commits)
        return deleted if self.log_start_moves is not None else deleted.limit(0)

    @cached_property
    def undelivered(self) -> tuple[DataFrame, DataFrame]:
        """(undelivered, behind an open transaction): inputs the input log holds (or held when a
        commit passed them) that no output read with read_committed delivers, and those of them
        whose output sits behind an open transaction (a read_committed read cannot reach it yet).

        A write the brokers lost is neither: the app could never read it (``lost_write``); nor is
        an input retention deleted before the group passed it (``deleted_by_retention``).
        """
        unlogged = F.coalesce(_unlogged(), F.lit(False)) & F.col("log_start_to").isNull()
        undelivered = self.retention.filter((F.col("side") == _ACK) & ~unlogged)
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

    @cached_property
    def views(self) -> dict[str, DataFrame | str]:
        """What the anomalies' SQL texts read, by name (:meth:`sql`): the inputs' frames, and
        views of them as SQL texts. Where a log start moved or an open transaction holds the
        output (rare), ``retention`` and ``undelivered`` are the frames that say so."""
        inputs = self.inputs
        frames = {
            "matched": self.matched, "offsets": inputs.offsets, "lag": inputs.lag,
            "reports": inputs.reports, "committed": inputs.committed,
            "uncommitted": inputs.uncommitted, "misrouted": inputs.misrouted,
        }  # fmt: skip
        views: dict[str, DataFrame | str] = {n: f for n, f in frames.items() if f is not None}
        if self._table is not None:  # a cached table is found by its name, not through a frame
            views["matched"] = f"SELECT * FROM {self._table}"
        views |= _VIEWS
        if self.log_start_moves is not None:
            views["retention"] = self.retention
        if self.log_start_moves is not None or self.held:
            views["undelivered"] = self.undelivered[0]
        return views

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

    def findings(self) -> dict[str, Finding]:
        """Every registered anomaly.

        The anomalies are counted together, in one Spark job: each job has a fixed cost that,
        on an incident's few thousand records, was most of the check. Only those found get
        more jobs, for their examples and details (:class:`Detailed`).
        """
        if self.moved is None and any(start > 0 for *_, start in self.starts_now or ()):
            self.moved = True
        results = {name: found.query(self) for name, found in REGISTRY.items()}
        queries = {
            name: result.frame if isinstance(result, Detailed) else result
            for name, result in results.items()
            if not isinstance(result, Finding)
        }
        # a query made as a frame is counted beside the SQL texts, as a view of its own
        frames = {f"q_{name}": q for name, q in queries.items() if isinstance(q, DataFrame)}
        texts = {
            name: f"SELECT * FROM {{q_{name}}}" if isinstance(query, DataFrame) else query
            for name, query in queries.items()
        }
        if self.moved is None:  # counted beside the anomalies, which assume it did not
            texts[_MOVED_NAME] = _LOG_START_MOVED
        texts |= {f"({name})": query for name, query in _TOTALS.items()}  # not an anomaly's
        counted = self.sql(_union_counts(texts, self.small), **frames).collect()
        counts = {row["name"]: row["count"] for row in counted}
        self._totals = {name: counts.get(f"({name})", 0) for name in _TOTALS}
        if self.moved is None and counts.get(_MOVED_NAME):
            self.moved = True  # rare: count again, with the movements
            for planned in ("retention", "deleted", "undelivered", "views"):
                self.__dict__.pop(planned, None)
            return self.findings()
        self.moved = bool(self.moved)
        findings = {}
        for name, result in results.items():
            found, kind = counts.get(name, 0), REGISTRY[name]
            if isinstance(result, Finding):
                findings[name] = result
            elif isinstance(result, Detailed):
                if found:
                    findings[name] = result.detail(self.frame(result.frame), found)
                else:
                    findings[name] = result.none
            else:
                limit = found if kind.every else self.examples
                rows = _rows(self.frame(result).orderBy(*kind.order), limit) if found else []
                every = {"every": [dict(row) for row in rows]} if kind.every else None
                findings[name] = Finding(found, rows[: self.examples], every)
        return findings

    def totals(self) -> dict[str, int]:
        """Acknowledged inputs, output records, inputs delivered at least once, and, when the
        input log was read, its records (``log_records``: its presence says it was read).
        Counted with the anomalies (:data:`_TOTALS`): :meth:`findings` comes first."""
        if self._totals is None:
            self.findings()
        assert self._totals is not None
        totals = dict(self._totals)
        if not self.source_read:
            del totals["log_records"]
        return totals

    def deliveries(self) -> DataFrame:
        """Each output record matched to its input, in output time."""
        return self.delivered.select(
            "event_id", "in_partition", "in_offset", "out_partition", "out_offset", "out_ts_ms"
        ).orderBy("out_ts_ms", "out_partition", "out_offset")

    def close(self) -> None:
        if self._table is not None:
            self.matched.sparkSession.sql(f"UNCACHE TABLE IF EXISTS {self._table}")
            self.matched.sparkSession.catalog.dropTempView(self._table)
        if "matched" in self.__dict__:
            self.matched.unpersist()  # a checkpoint's rows go with it once unreferenced


#: An anomaly's query: a SQL text over :attr:`Analysis.views`, a frame, or its finding at once.
Query = Callable[[Analysis], "str | DataFrame | Detailed | Finding"]


@dataclass(frozen=True)
class Anomaly:
    name: str
    query: Query
    order: tuple[str, ...]  # how its examples are ordered
    description: str
    #: Whether the result carries every row found (``every``), not only examples: for what a
    #: report marks one by one (each commit that went back), so no reader computes it again.
    every: bool = False


#: Every anomaly the checker looks for, by name, in the order reports list them.
REGISTRY: dict[str, Anomaly] = {}


def anomaly(*order: str, every: bool = False) -> Callable[[Query], Query]:
    """Register a query under its function's name; its docstring's first line describes it."""

    def register(query: Query) -> Query:
        description = (query.__doc__ or "").strip().splitlines()[0]
        REGISTRY[query.__name__] = Anomaly(query.__name__, query, order, description, every)
        return query

    return register


def analyse(inputs: CheckInputs, examples: int = 5) -> dict[str, Finding]:
    """Every registered anomaly, computed on Spark.

    The inputs are read once (into :func:`match`); a Kafka output is read a second time
    only for ``aborted_read``, so cache ``committed`` when it is costly to read, as
    :func:`~kafka_replay.checker.check.check_run` does.
    """
    analysis = Analysis(inputs, examples)
    try:
        return analysis.findings()
    finally:
        analysis.close()


#: Views every check has, as SQL texts (:meth:`Analysis.sql`); ``retention`` and
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

#: Whether an input partition's log start moved (any of :func:`_log_starts`' movements, as a
#: count): a lag sample, or the input log as read, shows it above offset 0.
_LOG_START_MOVED = """
    SELECT 1 FROM {lag} WHERE start > 0
    UNION ALL
    SELECT 1 FROM {matched} WHERE side = 2
    GROUP BY in_topic, in_partition HAVING min(in_offset) > 0"""
_MOVED_NAME = "(log start moved)"

#: What :meth:`Analysis.totals` says, counted with the anomalies, by name.
_TOTALS = {
    "acknowledged": "SELECT 1 FROM {matched} WHERE side = 0 OR (side = 1 AND acked AND first)",
    "output_records": "SELECT 1 FROM {matched} WHERE side = 1",
    "delivered": "SELECT 1 FROM {matched} WHERE side = 1 AND acked AND first",
    "log_records": "SELECT 1 FROM {matched} WHERE side = 2",
}

#: Anomalies that split the rows of one view between them, and the SQL text that names each
#: row's anomaly: one branch of the counting union for them all (one join of the view, not
#: one each), where each one's own text is kept for its examples.
_COUNTED_TOGETHER = {
    ("lost", "unseen_at_deadline"): """
        SELECT IF(passed, 'lost', 'unseen_at_deadline') AS name FROM {missing}
        WHERE passed IS NOT NULL""",
}

_MISSING_COLUMNS = "event_id, key, seq, in_partition, in_offset, max_committed, ack_ts"


@anomaly("in_partition", "in_offset")
def lost(analysis: Analysis) -> str:
    """Acknowledged, never in the output, although the group committed past it."""
    return f"SELECT {_MISSING_COLUMNS} FROM {{missing}} WHERE passed"


@anomaly("out_partition", "out_offset")
def misrouted(analysis: Analysis) -> str | Finding:
    """An input in an output where a correct service does not put it (``[expect]``)."""
    if analysis.inputs.misrouted is None:
        return Finding(0, [])
    return """
        SELECT event_id, key, seq, belongs_in, in_partition, in_offset, out_partition, out_offset
        FROM {misrouted}"""


@anomaly("in_partition", "in_offset")
def unseen_at_deadline(analysis: Analysis) -> str:
    """Acknowledged, not in the output, and no commit passed it: unknown, not lost."""
    return f"SELECT {_MISSING_COLUMNS} FROM {{missing}} WHERE NOT passed"


@anomaly("in_partition", "in_offset")
def behind_open_transaction(analysis: Analysis) -> DataFrame | Finding:
    """Acknowledged, its output only behind a transaction still open: neither delivered nor lost."""
    if not analysis.held:
        return Finding(0, [])
    return analysis.undelivered[1].select(
        "event_id", "key", "seq", "in_partition", "in_offset", "ack_ts"
    )


@anomaly()
def duplicate(analysis: Analysis) -> Detailed:
    """An input delivered more than once, and more often than the input log holds it if read."""
    copies = ", copies" if analysis.source_read else ""
    repeated = f"""
        SELECT event_id, key, seq, in_partition, in_offset, deliveries{copies} FROM {{matched}}
        WHERE side = 1 AND acked AND first AND deliveries > greatest(copies, 1)"""
    order = (F.desc("deliveries"), "in_partition", "in_offset")
    return Detailed(
        repeated,
        lambda frame, count: _counted(frame, count, "deliveries", order, analysis.examples),
        _not_repeated(),
    )


@anomaly("out_partition", "out_offset")
def aborted_read(analysis: Analysis) -> str | Finding:
    """An output record visible only without read_committed."""
    if analysis.inputs.uncommitted is None:
        return Finding(0, [])
    return (
        "SELECT * FROM {uncommitted} LEFT ANTI JOIN {committed} USING (out_partition, out_offset)"
    )


@anomaly("out_partition", "out_offset")
def reordered(analysis: Analysis) -> str | Finding:
    """For one key in one output partition, a first delivery with a lower seq than the last."""
    if not analysis.ordered:
        return Finding(0, [])
    return _seq_backwards("side = 1 AND acked AND first", "out_partition", "out_offset")


@anomaly("out_partition", "out_offset")
def unexpected(analysis: Analysis) -> str:
    """Output that matches no input, or in which no event_id was found."""
    # a record at the position of a known one is not unexpected; one with no position is
    return """
        SELECT event_id, out_partition, out_offset FROM (
            SELECT *, max(CAST(known AS INT)) OVER (PARTITION BY out_partition, out_offset)
                AS known_there
            FROM {matched} WHERE side = 1)
        WHERE (NOT known OR out_partition IS NULL OR out_offset IS NULL)
            AND NOT coalesce(out_partition IS NOT NULL AND out_offset IS NOT NULL
                AND known_there = 1, false)"""


@anomaly("log_offset", every=True)
def committed_offset_regression(analysis: Analysis) -> str:
    """An accepted commit lower than the partition's previous one (a tombstone resets)."""
    return """
        SELECT `group`, topic, partition, previous_offset, offset, log_offset, commit_ts_ms FROM (
            SELECT *, lag(offset) OVER (PARTITION BY `group`, topic, partition
                ORDER BY log_offset) AS previous_offset
            FROM {offsets})
        WHERE offset < previous_offset"""


@anomaly("ts")
def commit_by_non_owner(analysis: Analysis) -> DataFrame:
    """A commit for a partition the committing member did not hold (instrumented apps)."""
    return _non_owner_commits(analysis.inputs.reports)


@anomaly("in_partition", "in_offset")
def reprocessing_after_reset(analysis: Analysis) -> str:
    """A repeated delivery of an input whose offset had been committed as done before it."""
    # deliveries past an input's fair ones (one per copy in the input log) after a commit
    # passed it; the first such delivery of each input
    return """
        SELECT event_id, key, seq, in_partition, in_offset, delivery, committed_before FROM (
            SELECT *, row_number() OVER (PARTITION BY event_id ORDER BY delivery) AS nth FROM (
                SELECT r.event_id, r.key, r.seq, r.in_partition, r.in_offset, r.delivery,
                    max(c.offset) AS committed_before
                FROM (
                    SELECT * FROM (
                        SELECT *, row_number() OVER (PARTITION BY event_id
                            ORDER BY out_ts_ms, out_offset) AS delivery
                        FROM {matched}
                        WHERE side = 1 AND acked AND deliveries > greatest(copies, 1))
                    WHERE delivery > greatest(copies, 1)) r
                JOIN {commits} c ON c.topic = r.in_topic AND c.partition = r.in_partition
                    AND c.log_ts_ms <= r.out_ts_ms
                GROUP BY r.event_id, r.key, r.seq, r.in_partition, r.in_offset, r.delivery)
            WHERE in_offset < committed_before)
        WHERE nth = 1"""


@anomaly("partition")
def stuck_lag(analysis: Analysis) -> str:
    """A partition with nothing missing whose group lag stayed above zero at the end."""
    return """
        SELECT `group`, topic, partition, committed, `end`, lag FROM (
            SELECT *, row_number() OVER (PARTITION BY `group`, topic, partition ORDER BY ts DESC)
                AS rank
            FROM {lag}) final
        LEFT ANTI JOIN (SELECT in_partition FROM {undelivered}) m
            ON final.partition = m.in_partition
        WHERE rank = 1 AND lag > 0"""


@anomaly()
def lost_write(analysis: Analysis) -> Detailed | Finding:
    """Acknowledged by a broker, yet no copy is in the input log read at check time."""
    if not analysis.source_read:
        return Finding(0, [])
    # an input the log start passed was deleted from the log's start, not lost by a broker
    lost = """
        SELECT event_id, key, seq, in_partition, in_offset, ack_ts FROM {retention}
        WHERE copies = 0 AND log_start_to IS NULL"""

    def detail(frame: DataFrame, count: int) -> Finding:
        """Examples, each with what the input log holds at its position now."""
        examples = _rows(frame.orderBy("in_partition", "in_offset"), analysis.examples)
        now = _log_at(analysis.log, {(e["in_partition"], e["in_offset"]) for e in examples})
        for example in examples:
            example["log_event_id"] = now.get((example["in_partition"], example["in_offset"]))
        return Finding(count, examples)

    return Detailed(lost, detail, Finding(0, []))


@anomaly("in_partition", "in_offset")
def deleted_by_retention(analysis: Analysis) -> DataFrame | Finding:
    """Acknowledged, never delivered, and the log start passed it before any commit did."""
    if analysis.log_start_moves is None:
        return Finding(0, [])
    return analysis.deleted


@anomaly()
def log_duplicate(analysis: Analysis) -> Detailed | Finding:
    """An input written to the input log more than once (with the distribution of copies)."""
    if not analysis.source_read:
        return Finding(0, [])
    copied = """
        SELECT event_id, key, seq, in_partition AS partition, in_offset AS first_offset, copies
        FROM {matched} WHERE side = 2 AND first AND copies > 1"""
    order = (F.desc("copies"), "partition", "first_offset")

    def detail(frame: DataFrame, count: int) -> Finding:
        """The distribution of copies, and each example's offsets in the input log."""
        finding = _counted(frame, count, "copies", order, analysis.examples)
        offsets = _offsets_of(analysis.log, {e["event_id"] for e in finding.examples})
        for example in finding.examples:
            del example["first_offset"]
            example["offsets"] = offsets[example["event_id"]]
        return finding

    return Detailed(copied, detail, _not_repeated())


@anomaly("in_partition", "in_offset")
def log_reordered(analysis: Analysis) -> str | Finding:
    """For one key in one input partition, a first copy with a lower seq than the one before."""
    if not analysis.source_read:
        return Finding(0, [])
    return _seq_backwards("side = 2 AND first", "in_partition", "in_offset")


def _seq_backwards(rows: str, partition: str, offset: str) -> str:
    """For one key of one input topic in one partition, by offset, a record with a lower seq
    than the one before (each input topic's workload numbers its keys' records apart)."""
    return f"""
        SELECT event_id, key, seq, previous_seq, {partition}, {offset} FROM (
            SELECT *, lag(seq) OVER (PARTITION BY key, in_topic, {partition} ORDER BY {offset})
                AS previous_seq
            FROM {{matched}} WHERE {rows})
        WHERE seq < previous_seq"""


def _log_starts(lag: DataFrame, log: DataFrame, now: DataFrame | None = None) -> DataFrame:
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


def _passed(inputs: DataFrame, starts: DataFrame) -> DataFrame:
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


def _deleted_first(candidates: DataFrame, commits: DataFrame) -> DataFrame:
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
        .groupBy(*columns, *_MOVED)
        .agg(F.min("_ts").alias("committed_past_ts_ms"))
    )
    first = (
        F.col("committed_past_ts_ms").isNull()
        | F.col("seen_ts_ms").isNull()
        | (F.col("committed_past_ts_ms") > F.col("seen_ts_ms"))
    )
    return judged.filter(first).select(*columns, *_MOVED, "committed_past_ts_ms")


def _not_repeated() -> Finding:
    """What a repeat's finding says when nothing came twice."""
    return Finding(0, [], {"distribution": {}})


def _counted(
    frame: DataFrame, count: int, times: str, order: tuple[Column | str, ...], examples: int
) -> Finding:
    """``count`` rows, one per repeated record, with the distribution of how many ``times``
    each came."""
    frame = frame.cache()
    distribution = {str(row[times]): row["count"] for row in frame.groupBy(times).count().collect()}
    finding = Finding(
        count,
        _rows(frame.orderBy(*order), examples),
        {"distribution": dict(sorted(distribution.items(), key=lambda item: int(item[0])))},
    )
    frame.unpersist()
    return finding


def _log_at(log: DataFrame, positions: set[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The ``event_id`` the input log holds at each position now; a missing one holds none.

    For a few examples: a filter of the cached log, not a join.
    """
    if not positions:
        return {}
    wanted = F.lit(False)
    for partition, offset in positions:
        wanted |= (F.col("in_partition") == partition) & (F.col("in_offset") == offset)
    rows = log.filter(wanted).select("in_partition", "in_offset", "event_id").collect()
    return {(row["in_partition"], row["in_offset"]): row["event_id"] for row in rows}


def _offsets_of(log: DataFrame, event_ids: set[str]) -> dict[str, list[int]]:
    """Each of a few ``event_id``s' offsets in the input log, lowest first."""
    if not event_ids:
        return {}
    rows = log.filter(F.col("event_id").isin(sorted(event_ids))).select("event_id", "in_offset")
    offsets: dict[str, list[int]] = {event_id: [] for event_id in event_ids}
    for row in rows.collect():
        offsets[row["event_id"]].append(row["in_offset"])
    return {event_id: sorted(found) for event_id, found in offsets.items()}


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


#: The anomalies' names, in report order.
ANOMALIES = tuple(REGISTRY)
