"""Run the checker on one run and say whether the app's declared guarantee held."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_replay.history.store import read_stream

from . import sources
from .analysis import ANOMALIES, PLACES, Analysis
from .anomaly_registry import Finding
from .final_state import superseded_in
from .matching import CheckInputs
from .outputs import Expected, KafkaOutput, Output, Read, TopicEnd
from .recorded_checks import recorder
from .spark import SMALL_HISTORY_BYTES, fit_to_history
from .topic_ends import asked_together, log_starts
from .verdict import guarantee_result, verdict


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
    output: Output,
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
    logs = [(each.bootstrap_servers, each.topic, "read_uncommitted") for each in read]
    ends, held_now = asked_together(logs + output.asks(), output.held_in)
    place = output.read(spark, ends, expected)
    inputs = _inputs(spark, run_dir, place, read, ends, expected)
    if held_now is not None:
        inputs.held = held_now
    place.settle(inputs)
    kept = recorder(run_dir)  # None unless checks are recorded
    if kept is not None:
        inputs.log_starts = kept.remembering(inputs.log_starts)
    small = produced <= SMALL_HISTORY_BYTES
    analysis = Analysis(inputs, examples, ordered=output.ordered, small=small)
    try:
        place.verify(inputs)
        findings = analysis.findings()
        if kept is not None:
            kept.write(analysis, produced, findings)
        findings.update(place.findings(inputs, examples))
        totals = analysis.totals()
        timeline = _deliveries(analysis) if deliveries else []
    finally:
        analysis.close()
        place.release()
    attach_context(findings, read_stream(Path(run_dir) / "events" / "lifecycle.jsonl"))
    return _judged(guarantee, findings, totals, timeline)


def _inputs(
    spark: SparkSession,
    run_dir: Path,
    place: Read,
    read: Sequence[KafkaOutput],
    ends: dict[TopicEnd, str],
    expected: Expected | None,
) -> CheckInputs:
    """What the analysis matches: the history, the place's records and the input topics'
    logs, kept to the inputs that belong in this place."""
    log = None
    for each in read:
        where = (each.bootstrap_servers, each.topic, "read_uncommitted")
        logged = sources.kafka_log(spark, *where, ends[where])
        log = logged if log is None else log.unionByName(logged)
    inputs = history_inputs(spark, run_dir, place.committed, place.uncommitted, log)
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
    return inputs


def _judged(
    guarantee: str, findings: dict[str, Finding], totals: dict[str, int], timeline: list
) -> CheckResult:
    """The verdict the findings give, and whether it keeps ``guarantee``."""
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


def _deliveries(analysis: Analysis) -> list[dict[str, Any]]:
    """Each output record matched to its input: what the output shows of how the app consumed.

    Collected to the driver: meant for runs of an incident's size, not for benchmarks.
    """
    return [row.asDict() for row in analysis.deliveries().collect()]
