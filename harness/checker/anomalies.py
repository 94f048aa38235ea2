"""The anomalies the checker looks for, each a query registered with ``@anomaly``.

Each one is a function of the check's views (:class:`~kafka_replay.checker.views.AnalysisViews`)
that returns its query, most as one SQL text over them (``{matched}``, ``{missing}`` and so on),
or its finding at once where it cannot apply (no input log read, no ordered output). It
registers itself as this module is imported, and reports list the anomalies in the order they
are defined here. ``docs/checker.md`` describes each one, and a test keeps the two in step.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .anomaly_registry import Detailed, Finding, anomaly, example_rows
from .final_state import WRONG_COLUMNS
from .views import AnalysisViews

#: What the two halves of the undelivered inputs (``lost``, ``unseen_at_deadline``) show.
_MISSING_COLUMNS = "event_id, key, seq, in_partition, in_offset, max_committed, ack_ts"


@anomaly("in_partition", "in_offset")
def lost(analysis: AnalysisViews) -> str:
    """Acknowledged, never in the output, although the group committed past it."""
    return f"SELECT {_MISSING_COLUMNS} FROM {{missing}} WHERE passed"


@anomaly("out_partition", "out_offset")
def misrouted(analysis: AnalysisViews) -> str | Finding:
    """An input in an output where a correct service does not put it (``[expect]``)."""
    if analysis.inputs.misrouted is None:
        return Finding(0, [])
    return """
        SELECT event_id, key, seq, belongs_in, in_partition, in_offset, out_partition, out_offset
        FROM {misrouted}"""


@anomaly("key")
def stale_value(analysis: AnalysisViews) -> str | Finding:
    """A key a service's state holds at an older value than its last input's (final state)."""
    if analysis.inputs.state is None:
        return Finding(0, [])
    return f"SELECT {', '.join(WRONG_COLUMNS)} FROM {{state}} WHERE NOT deleted"


@anomaly("key")
def resurrected_key(analysis: AnalysisViews) -> str | Finding:
    """A key a service's state still holds although its last input deleted it (final state)."""
    if analysis.inputs.state is None:
        return Finding(0, [])
    return f"SELECT {', '.join(WRONG_COLUMNS)} FROM {{state}} WHERE deleted"


@anomaly("in_partition", "in_offset")
def unseen_at_deadline(analysis: AnalysisViews) -> str:
    """Acknowledged, not in the output, and no commit passed it: unknown, not lost."""
    return f"SELECT {_MISSING_COLUMNS} FROM {{missing}} WHERE NOT passed"


@anomaly("in_partition", "in_offset")
def behind_open_transaction(analysis: AnalysisViews) -> DataFrame | Finding:
    """Acknowledged, its output only behind a transaction still open: neither delivered nor lost."""
    if not analysis.held:
        return Finding(0, [])
    return analysis.undelivered[1].select(
        "event_id", "key", "seq", "in_partition", "in_offset", "ack_ts"
    )


@anomaly()
def duplicate(analysis: AnalysisViews) -> Detailed:
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
def aborted_read(analysis: AnalysisViews) -> str | Finding:
    """An output record visible only without read_committed."""
    if analysis.inputs.uncommitted is None:
        return Finding(0, [])
    # an outer join, not an anti join: Spark moves an anti join below its left side's
    # one-partition read (a small run's), which then needs a shuffle
    return """
        SELECT u.* FROM {uncommitted} u LEFT JOIN (
            SELECT out_partition, out_offset, true AS read_committed FROM {committed}) c
        ON u.out_partition = c.out_partition AND u.out_offset = c.out_offset
        WHERE c.read_committed IS NULL"""


@anomaly("out_partition", "out_offset")
def reordered(analysis: AnalysisViews) -> str | Finding:
    """For one key in one output partition, a first delivery with a lower seq than the last."""
    if not analysis.ordered:
        return Finding(0, [])
    return _seq_backwards("side = 1 AND acked AND first", "out_partition", "out_offset")


@anomaly("out_partition", "out_offset")
def unexpected(analysis: AnalysisViews) -> str:
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
def committed_offset_regression(analysis: AnalysisViews) -> str:
    """An accepted commit lower than the partition's previous one (a tombstone resets)."""
    return """
        SELECT `group`, topic, partition, previous_offset, offset, log_offset, commit_ts_ms FROM (
            SELECT *, lag(offset) OVER (PARTITION BY `group`, topic, partition
                ORDER BY log_offset) AS previous_offset
            FROM {offsets})
        WHERE offset < previous_offset"""


@anomaly("ts")
def commit_by_non_owner(analysis: AnalysisViews) -> DataFrame:
    """A commit for a partition the committing member did not hold (instrumented apps)."""
    return _non_owner_commits(analysis.inputs.reports)


@anomaly("in_partition", "in_offset")
def reprocessing_after_reset(analysis: AnalysisViews) -> str:
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
def stuck_lag(analysis: AnalysisViews) -> str:
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
def lost_write(analysis: AnalysisViews) -> Detailed | Finding:
    """Acknowledged by a broker, yet no copy is in the input log read at check time."""
    if not analysis.source_read or analysis.inputs.source_mirrored:
        return Finding(0, [])
    # an input the log start passed was deleted from the log's start, not lost by a broker
    lost = """
        SELECT event_id, key, seq, in_partition, in_offset, ack_ts FROM {retention}
        WHERE copies = 0 AND log_start_to IS NULL AND NOT coalesce(superseded, false)"""

    def detail(frame: DataFrame, count: int) -> Finding:
        """Examples, each with what the input log holds at its position now."""
        examples = example_rows(frame.orderBy("in_partition", "in_offset"), analysis.examples)
        now = _log_at(analysis.log, {(e["in_partition"], e["in_offset"]) for e in examples})
        for example in examples:
            example["log_event_id"] = now.get((example["in_partition"], example["in_offset"]))
        return Finding(count, examples)

    return Detailed(lost, detail, Finding(0, []))


@anomaly("in_partition", "in_offset")
def deleted_by_retention(analysis: AnalysisViews) -> DataFrame | Finding:
    """Acknowledged, never delivered, and the log start passed it before any commit did."""
    if analysis.log_start_moves is None:
        return Finding(0, [])
    return analysis.deleted


@anomaly("in_partition", "in_offset")
def removed_by_compaction(analysis: AnalysisViews) -> str | Finding:
    """Acknowledged, never delivered, and gone from its compacted input log, a later input of
    its key there: its topic's cleaner removed it, by design."""
    if not analysis.source_read:
        return Finding(0, [])
    return """
        SELECT event_id, key, seq, in_partition, in_offset, ack_ts FROM {retention}
        WHERE side = 0 AND copies = 0 AND coalesce(superseded, false)"""


@anomaly("in_partition", "in_offset")
def not_mirrored(analysis: AnalysisViews) -> str | Finding:
    """Acknowledged by the primary, never delivered, and absent from the mirror the app moved to."""
    if not analysis.source_read or not analysis.inputs.source_mirrored:
        return Finding(0, [])
    # lost with the primary before MirrorMaker 2 copied it: no app could read it on the mirror
    return """
        SELECT event_id, key, seq, in_partition, in_offset, ack_ts FROM {retention}
        WHERE side = 0 AND copies = 0 AND log_start_to IS NULL"""


@anomaly()
def log_duplicate(analysis: AnalysisViews) -> Detailed | Finding:
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
def log_reordered(analysis: AnalysisViews) -> str | Finding:
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
        example_rows(frame.orderBy(*order), examples),
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


def _non_owner_commits(reports: DataFrame) -> DataFrame:
    commits = reports.filter(F.col("kind") == "commit").select(
        "ts", "instance", "member", "assignment", F.explode("offsets").alias("committed")
    )
    committed = ("committed.topic", "committed.partition", "committed.offset")  # named by leaf
    commits = commits.select("ts", "instance", "member", "assignment", *committed)
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
