"""Run the checker on one run and say whether the app's declared guarantee held."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_replay.apps.correlation import OutputRecord
from kafka_replay.history.store import read_stream

from . import sources
from .analysis import ANOMALIES, PLACES, Analysis
from .anomaly_registry import Finding
from .final_state import judge_state, superseded_in
from .matching import CheckInputs
from .recorded_checks import recorder
from .spark import SMALL_HISTORY_BYTES, fit_to_history
from .topic_ends import asked_together, log_starts
from .verdict import guarantee_result, verdict


@dataclass(frozen=True)
class KafkaOutput:
    """The app's output topic (read both read_committed and read_uncommitted)."""

    bootstrap_servers: str
    topic: str
    event_id: Callable[[OutputRecord], str | None] | None = None  # default: header or JSON
    #: payload fields (JSON paths) that carry the event_id where the output drops headers
    id_fields: tuple[str, ...] = ()
    #: As a ``source``: the inputs' copy on a mirror cluster, which the app was moved to. An
    #: acknowledged input absent there was ``not_mirrored`` (not a broker's ``lost_write``).
    mirrored: bool = False
    #: As a ``source``: a compacted topic. An acknowledged input absent from it that a later
    #: one of its key superseded was removed by its cleaner (``removed_by_compaction``).
    compacted: bool = False


@dataclass(frozen=True)
class FileOutput:
    """Output the app wrote as files with an ``event_id`` column (JSON lines or Parquet)."""

    path: str
    file_format: str = "json"  # one of kafka_replay.checker.OUTPUT_FORMATS


@dataclass(frozen=True)
class JdbcOutput:
    """Output the app wrote to a database table: a row per delivery, naming its input in
    ``id_column``.

    The JDBC driver must be on the session's classpath (``spark_session(extra_jars=...)``);
    ``driver`` names its class (see :func:`kafka_replay.servers.maven.jdbc_driver_class`).
    ``table`` may be a query as a derived table (``(SELECT ...) AS rows``). With
    ``effect_column``, an input whose rows add up to more than ``effect_each`` (default: its
    first row's value) had its effect applied again: ``effect_repeated``.
    """

    url: str
    table: str
    driver: str | None = None
    id_column: str = "event_id"
    effect_column: str | None = None
    effect_each: float | None = None
    time_column: str | None = None  # a timestamp column: each row's out_ts_ms (else null)
    #: The column holding each row's Kafka key: the table is the service's state, one row per
    #: key, judged by each key's last input (:mod:`~kafka_replay.checker.final_state`).
    key_column: str | None = None


@dataclass(frozen=True)
class Expected:
    """Which inputs belong in the output checked, where a service puts inputs in several places.

    ``marks``: the inputs whose ack carries one of these marks (``output`` for an unmarked
    input; see ``Payload(expect=...)``). An output record of an input marked for another
    place (but ``filtered``: expected nowhere, so ``unexpected``) is ``misrouted``, and an
    input of this output found only in ``elsewhere`` (the ``event_id`` of every other output
    checked) is misrouted there, not lost here. With ``kinds``, the output is one kind of a
    fan-out's topic: the records ``kind_of`` names ``kind``; a record of no kind listed is
    unexpected in the first kind's check.
    """

    marks: tuple[str, ...] = ("output",)
    elsewhere: DataFrame | None = None
    kind_of: Callable[[OutputRecord], str | None] | None = None
    kind: str | None = None
    kinds: tuple[str, ...] = ()
    #: One service of a pipeline checked on its own (a hop): the workload's topics it reads
    #: (their acknowledged inputs), and the topics between services it reads (their records
    #: are its inputs, each keeping the mark its acknowledgement has).
    acked_topics: tuple[str, ...] | None = None
    between: tuple[KafkaOutput, ...] = ()
    #: A pipeline's end-to-end check: no one group's commits speak for the chain, so an input
    #: not delivered is unseen here; each service's own check says where it was lost.
    without_commits: bool = False


@dataclass
class CheckResult:
    guarantee: str
    verdict: str
    result: str  # pass, fail or unknown
    totals: dict[str, int]
    findings: dict[str, Finding] = field(default_factory=dict)
    #: With ``check_run(..., deliveries=True)``: every matched output record, in output time.
    deliveries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {name: finding.count for name, finding in self.findings.items()}

    @property
    def source_read(self) -> bool:
        """Whether the input topic's log was read: only then are ``lost_write``,
        ``log_duplicate`` and ``log_reordered`` looked for (else they are 0, not measured)."""
        return "log_records" in self.totals

    @classmethod
    def from_json(
        cls, data: dict[str, Any], deliveries: list[dict[str, Any]] | None = None
    ) -> CheckResult:
        """The result :meth:`to_json` wrote (a stored run's ``check.json``), with the
        deliveries kept beside it where given."""
        findings = {
            name: Finding(
                found["count"],
                found["examples"],
                {k: v for k, v in found.items() if k not in ("count", "examples")} or None,
            )
            for name, found in data["anomalies"].items()
        }
        return cls(
            data["guarantee"],
            data["verdict"],
            data["result"],
            dict(data["totals"]),
            findings,
            list(deliveries or []),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "guarantee": self.guarantee,
            "verdict": self.verdict,
            "result": self.result,
            "totals": self.totals,
            "anomalies": {
                name: {"count": f.count, "examples": f.examples, **(f.detail or {})}
                for name, f in self.findings.items()
            },
        }

    def summary(self) -> str:
        lines = [
            f"verdict {self.verdict} against declared {self.guarantee}: {self.result.upper()}",
            "  " + ", ".join(f"{name} {count}" for name, count in self.totals.items()),
        ]
        for name in ANOMALIES:
            finding = self.findings.get(name)  # a stored check may predate an anomaly
            if finding is not None and finding.count:
                lines.append(f"  {name.replace('_', ' ')}: {finding.count}")
                lines.extend(f"    e.g. {json.dumps(e, default=str)}" for e in finding.examples[:3])
        return "\n".join(lines)


CONTEXT_WINDOW_S = 10.0
CONTEXT_EVENTS = 5
#: How an output topic is read: as its readers see it, and with what aborted and open
#: transactions wrote.
_ISOLATIONS = ("read_committed", "read_uncommitted")


def _moment(example: dict[str, Any]) -> float | None:
    """When an example happened, in seconds, from whichever time it carries."""
    for field_name, scale in (
        ("ts", 1),
        ("ack_ts", 1),
        ("commit_ts_ms", 1e-3),
        ("out_ts_ms", 1e-3),
    ):
        if example.get(field_name) is not None:
            return float(example[field_name]) * scale
    return None


def attach_context(findings: dict[str, Finding], lifecycle: list[dict[str, Any]]) -> None:
    """Give each example the app lifecycle events (starts, exits, signals) nearest to it."""
    for finding in findings.values():
        for example in finding.examples:
            moment = _moment(example)
            if moment is None:
                continue
            near = [e for e in lifecycle if abs(e.get("ts", 0) - moment) <= CONTEXT_WINDOW_S]
            near.sort(key=lambda e: abs(e["ts"] - moment))
            example["context"] = sorted(near[:CONTEXT_EVENTS], key=lambda e: e["ts"])


def history_inputs(
    spark: SparkSession,
    run_dir: Path,
    committed: DataFrame,
    uncommitted: DataFrame | None = None,
    source: DataFrame | None = None,
) -> CheckInputs:
    """The run history's streams beside an output (and the input log) already read."""
    return CheckInputs(
        acks=sources.acknowledged_inputs(spark, run_dir),
        committed=committed,
        offsets=sources.read_stream(spark, run_dir, "offsets", "offsets"),
        reports=sources.read_stream(spark, run_dir, "app-*", "app"),
        lag=sources.read_stream(spark, run_dir, "lag", "lag"),
        uncommitted=uncommitted,
        source=source,
    )


def history_bytes(run_dir: Path) -> int:
    """The size of a run's produce history: what sizes a check (see ``fit_to_history``)."""
    produced = Path(run_dir) / "events" / "produce.jsonl"
    return produced.stat().st_size if produced.exists() else 0


def check_run(
    spark: SparkSession,
    run_dir: Path,
    output: KafkaOutput | FileOutput | JdbcOutput,
    guarantee: str,
    source: KafkaOutput | Sequence[KafkaOutput] | None = None,
    examples: int = 5,
    deliveries: bool = False,
    expected: Expected | None = None,
) -> CheckResult:
    """Read the run's history and output, find every anomaly, and judge the guarantee.

    ``expected``: which inputs belong in this output (default: every acknowledged one).

    ``source`` is the input topic, or each of them (its ``event_id`` function is not used:
    input records are the workload's). Reading it finds what the brokers did to the
    acknowledged writes (``lost_write``, ``log_duplicate``, ``log_reordered``) and keeps the
    app's verdict to what the app could read: a lost write is not ``lost`` or
    ``unseen_at_deadline``, and an input the log holds twice may be delivered twice. Where the
    log starts once read, with the lag samples' log starts, tells a record retention deleted
    (``deleted_by_retention``) from a lost write. An output
    of an input the log holds but no ack recorded is not ``unexpected`` either.

    An output record with no event_id (none found, or the user's function returned None)
    counts as unexpected. :class:`~kafka_replay.checker.sources.OutputIdError` when the user's
    function (``KafkaOutput.event_id``) raises on a record.
    """
    produced = history_bytes(run_dir)
    fit_to_history(spark, produced)
    read = [source] if isinstance(source, KafkaOutput) else list(source or [])
    reads = [(each.bootstrap_servers, each.topic, "read_uncommitted") for each in read]
    held_in = None
    if isinstance(output, KafkaOutput):
        reads += [(output.bootstrap_servers, output.topic, i) for i in _ISOLATIONS]
        held_in = (output.bootstrap_servers, output.topic)  # asked before the output is read
    ends, held_now = asked_together(reads, held_in)
    uncommitted = None
    if isinstance(output, KafkaOutput):
        if output.event_id:
            event_id = sources.user_event_id(output.event_id)
        else:
            event_id = sources.default_event_id(output.id_fields)
        kind = sources.user_event_id(expected.kind_of) if expected and expected.kind_of else None
        committed, uncommitted = (
            _of_kind(
                sources.kafka_topic(
                    spark,
                    output.bootstrap_servers,
                    output.topic,
                    isolation,
                    event_id,
                    kind,
                    ends[output.bootstrap_servers, output.topic, isolation],
                ),
                expected,
            )
            for isolation in _ISOLATIONS
        )
    elif isinstance(output, JdbcOutput):
        rows = sources.jdbc_table(
            spark,
            output.url,
            output.table,
            output.driver,
            output.id_column,
            output.effect_column,
            output.time_column,
            output.key_column,
        )
        if output.effect_column is not None or output.key_column is not None:
            rows = rows.cache()  # read once for the effects or the state, and the outputs
        committed = sources.positionless(rows)
    else:
        committed = sources.files(spark, output.path, output.file_format)
    log = None
    for each in read:
        where = (each.bootstrap_servers, each.topic, "read_uncommitted")
        logged = sources.kafka_log(spark, *where, ends[where])
        log = logged if log is None else log.unionByName(logged)
    committed = committed.cache()
    inputs = history_inputs(spark, run_dir, committed, uncommitted, log)
    inputs.source_mirrored = any(each.mirrored for each in read)
    compacted = [each.topic for each in read if each.compacted]
    if compacted:
        inputs.acks = superseded_in(inputs.acks, compacted)
    if log is not None:
        inputs.log_starts = lambda: [
            (each.topic, partition, start)
            for each in read
            for partition, start in log_starts(each.bootstrap_servers, each.topic).items()
        ]
    if expected is not None and expected.acked_topics is not None:
        inputs.acks = _hop_inputs(spark, inputs.acks, expected)
    if expected is not None and expected.without_commits:
        inputs.offsets = inputs.offsets.limit(0)
    if expected is not None:
        _expect(inputs, expected)
    if held_now is not None:
        inputs.held = held_now
    if isinstance(output, JdbcOutput) and output.key_column is not None:
        inputs.acks, kept_rows, inputs.state = judge_state(inputs.acks, rows)
        inputs.committed = sources.positionless(kept_rows)
    kept = recorder(run_dir)  # None unless checks are recorded
    if kept is not None:
        inputs.log_starts = kept.remembering(inputs.log_starts)
    analysis = Analysis(
        inputs,
        examples,
        ordered=not isinstance(output, JdbcOutput),
        small=produced <= SMALL_HISTORY_BYTES,
    )
    try:
        if isinstance(output, KafkaOutput) and output.event_id and uncommitted is not None:
            for frame in (inputs.committed, uncommitted):  # aborted records are only in the latter
                sources.raise_for_failed_ids(frame, output.topic, output.event_id)
        if isinstance(output, KafkaOutput) and expected and expected.kind_of:
            sources.raise_for_failed_ids(inputs.committed, output.topic, expected.kind_of, "kind")
        findings = analysis.findings()
        if kept is not None:
            kept.write(analysis, produced, findings)
        if isinstance(output, JdbcOutput) and output.effect_column is not None:
            findings["effect_repeated"] = effects_repeated(rows, inputs.acks, output, examples)
        totals = analysis.totals()
        timeline = _deliveries(analysis) if deliveries else []
    finally:
        analysis.close()
        committed.unpersist()
        if isinstance(output, JdbcOutput):
            rows.unpersist()
    attach_context(findings, read_stream(Path(run_dir) / "events" / "lifecycle.jsonl"))
    lost, dup, unseen, pending = (
        findings[n].count
        for n in ("lost", "duplicate", "unseen_at_deadline", "behind_open_transaction")
    )
    lost += findings["misrouted"].count  # not in its place: not delivered
    # a state holding a value its key's last input replaced, or a key it deleted: that
    # input's effect never reached it
    lost += findings["stale_value"].count + findings["resurrected_key"].count
    unseen += pending  # neither delivered nor lost until its transaction ends
    if "effect_repeated" in findings:  # charged twice in one row is a duplicate too
        dup += findings["effect_repeated"].count
    return CheckResult(
        guarantee,
        verdict(lost, dup, unseen),
        guarantee_result(guarantee, lost, dup, unseen),
        totals,
        findings,
        timeline,
    )


def _of_kind(frame: DataFrame, expected: Expected | None) -> DataFrame:
    """The records of the kind ``expected`` checks (see :class:`Expected`); all without one.
    Records of an unlisted kind stay in the first kind's check, with no event_id."""
    if expected is None or expected.kind_of is None:
        return frame
    kind = F.col("kind")
    known = kind.isin(list(expected.kinds)) & ~kind.startswith(sources.FAILED)
    if expected.kind == expected.kinds[0]:
        frame = frame.filter((kind == expected.kind) | ~known | kind.isNull())
        frame = frame.withColumn("event_id", F.when(kind == expected.kind, F.col("event_id")))
    else:
        frame = frame.filter(kind == expected.kind)
    return frame


def _hop_inputs(spark: SparkSession, acks: DataFrame, expected: Expected) -> DataFrame:
    """A hop's inputs: the acknowledged ones of the workload's topics it reads, and every
    record of the topics between services it reads, with its acknowledgement's mark."""
    assert expected.acked_topics is not None
    hop = acks.filter(F.col("in_topic").isin(list(expected.acked_topics)))
    for topic in expected.between:
        hop = hop.unionByName(
            sources.logged_inputs(spark, topic.bootstrap_servers, topic.topic, acks)
        )
    return hop


def _expect(inputs: CheckInputs, expected: Expected) -> None:
    """Keep the inputs that belong in this output; set aside, as ``misrouted``, its records
    of inputs that belong in another output (see :class:`Expected`)."""
    acks, output, mark = inputs.acks, inputs.committed, F.col("expect")
    inputs.acks = acks.filter(mark.isin(list(expected.marks)))
    if {*expected.marks, "filtered"} >= set(PLACES) and expected.elsewhere is None:
        return  # every input belongs here or nowhere: none can be in the wrong place
    other = acks.filter(~mark.isin([*expected.marks, "filtered"])).select("event_id").distinct()
    belongs = acks.select(
        "event_id", "key", "seq", "in_partition", "in_offset", mark.alias("belongs_in")
    ).dropDuplicates(["event_id"])
    inputs.misrouted = output.join(other, "event_id", "left_semi").join(belongs, "event_id")
    inputs.committed = output.join(other, "event_id", "left_anti")
    if inputs.uncommitted is not None:
        inputs.uncommitted = inputs.uncommitted.join(other, "event_id", "left_anti")
    if expected.elsewhere is not None:  # found only in another output: misrouted there
        only_there = expected.elsewhere.join(output.select("event_id"), "event_id", "left_anti")
        inputs.acks = inputs.acks.join(only_there, "event_id", "left_anti")


def effects_repeated(
    rows: DataFrame, acks: DataFrame, output: JdbcOutput, examples: int
) -> Finding:
    """Acknowledged inputs whose rows add up to more than one application of their effect."""
    once = F.lit(output.effect_each) if output.effect_each is not None else F.first("effect")
    per_input = rows.groupBy("event_id").agg(
        F.sum("effect").alias("effect"), once.alias("effect_each"), F.count("*").alias("rows")
    )
    repeated = per_input.filter(F.col("effect") > F.col("effect_each")).join(
        acks.select("event_id", "key", "seq"), "event_id"
    )
    found = repeated.orderBy("event_id").cache()
    try:
        count = found.count()
        shown = [row.asDict() for row in found.limit(examples).collect()]
    finally:
        found.unpersist()
    return Finding(count, shown, {"column": output.effect_column})


def _deliveries(analysis: Analysis) -> list[dict[str, Any]]:
    """Each output record matched to its input: what the output shows of how the app consumed.

    Collected to the driver: meant for runs of an incident's size, not for benchmarks.
    """
    return [row.asDict() for row in analysis.deliveries().collect()]
