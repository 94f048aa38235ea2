"""Run the checker on one run and say whether the app's declared guarantee held."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_replay.apps.correlation import OutputRecord
from kafka_replay.history.stable_offsets import held_partitions
from kafka_replay.history.store import read_stream

from . import sources
from .analysis import ANOMALIES, Analysis, CheckInputs, Finding
from .spark import SMALL_HISTORY_BYTES, fit_to_history
from .verdict import judge, verdict


@dataclass(frozen=True)
class KafkaOutput:
    """The app's output topic (read both read_committed and read_uncommitted)."""

    bootstrap_servers: str
    topic: str
    event_id: Callable[[OutputRecord], str | None] | None = None  # default: header or JSON
    #: payload fields (JSON paths) that carry the event_id where the output drops headers
    id_fields: tuple[str, ...] = ()


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
    ``driver`` names its class (see :func:`kafka_replay.checker.spark.jdbc_driver_class`).
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
            finding = self.findings[name]
            if finding.count:
                lines.append(f"  {name.replace('_', ' ')}: {finding.count}")
                lines.extend(f"    e.g. {json.dumps(e, default=str)}" for e in finding.examples[:3])
        return "\n".join(lines)


CONTEXT_WINDOW_S = 10.0
CONTEXT_EVENTS = 5


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
    source: KafkaOutput | None = None,
    examples: int = 5,
    deliveries: bool = False,
) -> CheckResult:
    """Read the run's history and output, find every anomaly, and judge the guarantee.

    ``source`` is the input topic (its ``event_id`` function is not used: input records are
    the workload's). Reading it finds what the brokers did to the acknowledged writes
    (``lost_write``, ``log_duplicate``, ``log_reordered``) and keeps the app's verdict to what
    the app could read: a lost write is not ``lost`` or ``unseen_at_deadline``, and an input
    the log holds twice may be delivered twice. An output of an input the log holds but no
    ack recorded is not ``unexpected`` either.

    An output record with no event_id (none found, or the user's function returned None)
    counts as unexpected. :class:`~kafka_replay.checker.sources.OutputIdError` when the user's
    function (``KafkaOutput.event_id``) raises on a record.
    """
    produced = history_bytes(run_dir)
    fit_to_history(spark, produced)
    uncommitted = None
    if isinstance(output, KafkaOutput):
        if output.event_id:
            event_id = sources.user_event_id(output.event_id)
        else:
            event_id = sources.default_event_id(output.id_fields)
        committed = sources.kafka_topic(
            spark, output.bootstrap_servers, output.topic, "read_committed", event_id
        )
        uncommitted = sources.kafka_topic(
            spark, output.bootstrap_servers, output.topic, "read_uncommitted", event_id
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
        )
        if output.effect_column is not None:  # read once for the effects and the outputs
            rows = rows.cache()
        committed = sources.positionless(rows)
    else:
        committed = sources.files(spark, output.path, output.file_format)
    log = None
    if source is not None:
        log = sources.kafka_log(spark, source.bootstrap_servers, source.topic)
    inputs = history_inputs(spark, run_dir, committed.cache(), uncommitted, log)
    if isinstance(output, KafkaOutput):  # read before the output: a read stops at these
        inputs.held = held_partitions(output.bootstrap_servers, output.topic)
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
        findings = analysis.findings()
        if isinstance(output, JdbcOutput) and output.effect_column is not None:
            findings["effect_repeated"] = effects_repeated(rows, inputs.acks, output, examples)
        totals = analysis.totals()
        timeline = _deliveries(analysis) if deliveries else []
    finally:
        analysis.close()
        inputs.committed.unpersist()
        if isinstance(output, JdbcOutput):
            rows.unpersist()
    attach_context(findings, read_stream(Path(run_dir) / "events" / "lifecycle.jsonl"))
    lost, dup, unseen, pending = (
        findings[n].count
        for n in ("lost", "duplicate", "unseen_at_deadline", "behind_open_transaction")
    )
    unseen += pending  # neither delivered nor lost until its transaction ends
    if "effect_repeated" in findings:  # charged twice in one row is a duplicate too
        dup += findings["effect_repeated"].count
    return CheckResult(
        guarantee,
        verdict(lost, dup, unseen),
        judge(guarantee, lost, dup, unseen),
        totals,
        findings,
        timeline,
    )


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
