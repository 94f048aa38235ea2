"""Checking and judging a played run: every place its results land checked by the Spark
checker (and a pipeline's hops), the symptoms measured from its evidence, the pass/fail rule.

The runner (:mod:`kafka_replay.playing.runner`) hands over what it played (its run record, as
:class:`Played` reads it); each part returns a value (:class:`Checked`, :class:`Measured`,
:class:`Judged`), and the first and last write themselves into the run's outcome, in one place
each (``into``), for a run played and a stored one judged again alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kafka_replay.apps import load_callable
from kafka_replay.checker import CheckResult, JdbcOutput, KafkaOutput, check_run
from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import Incident, Profile, Sink
from kafka_replay.history import RunHistory
from kafka_replay.history.broker_log import group_events, refused_versions, replica_events
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.history.store import (
    CHECK,
    DELIVERIES,
    HOP_CHECKS,
    OUTPUT_TOPIC_CHECK,
    PLACE_CHECKS,
    SIDE_EFFECTS_CHECK,
)
from kafka_replay.report.outcome import Outcome

from .evidence import Evidence
from .held_back import held_back
from .judge import judge
from .pipeline import check_services, first_wrong, hop_summary
from .places import check_places, places, worst
from .refused_versions import refused_counts, refused_reason
from .share_group_reason import archived_reason
from .symptoms import measure

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_replay.sinks.database import Database


class Played(Protocol):
    """What a played run gives its judges: where it ran, what it wrote, what it promised (the
    run's record, :class:`kafka_replay.playing.run_record.RunRecord`)."""

    @property
    def cluster(self) -> Cluster | None: ...
    @property
    def history(self) -> RunHistory: ...
    @property
    def incident(self) -> Incident: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def topics(self) -> Mapping[str, str]: ...
    @property
    def guarantee(self) -> str: ...
    @property
    def output_id(self) -> str | None: ...  # ``--output-id``: module:function -> event_id
    @property
    def users_app(self) -> bool: ...
    @property
    def database(self) -> Database | None: ...
    @property
    def moved_to(self) -> Cluster | None:
        """The cluster a ``fail_over`` moved the app to (``[mirror]``): its copy of the inputs
        is what the app could read at the end."""
        ...


@dataclass(frozen=True)
class Checked:
    """Every place of a run checked: what the symptoms read, what the gate takes, and what the
    outcome says of the places."""

    read: CheckResult  # what the symptoms read: the last service's consumption
    judged: CheckResult  # the place whose check the gate takes: the worst
    side_effects: CheckResult | None
    #: Each place by name, when there are several (each judged, the worst the run's).
    outputs: dict[str, CheckResult] = field(default_factory=dict)
    hops: dict[str, dict[str, Any]] = field(default_factory=dict)
    first_wrong_hop: str | None = None
    dead_lettered: int | None = None
    reasons: tuple[str, ...] = ()

    def into(self, outcome: Outcome) -> None:
        """What the checks say, written into the run's outcome."""
        outcome.verdict = self.judged.verdict
        outcome.check = self.judged.result
        outcome.anomalies = self.judged.counts
        outcome.dead_lettered = self.dead_lettered
        if len(self.outputs) > 1:
            outcome.outputs = {
                name: {"verdict": c.verdict, "check": c.result, "anomalies": c.counts}
                for name, c in self.outputs.items()
            }
        if self.hops:
            outcome.hops = self.hops
            outcome.first_wrong_hop = self.first_wrong_hop
        outcome.reasons += self.reasons


@dataclass(frozen=True)
class Judged:
    """The symptoms measured and the pass/fail rule's judgement over them and the checks."""

    symptoms: dict[str, Any]
    symptoms_outside: dict[str, Any] | None
    passed: bool
    reproduced: bool | None
    result: str
    not_judged: str | None
    reasons: tuple[str, ...]
    refused_versions: dict[str, int]

    def into(self, outcome: Outcome) -> None:
        """The judgement, written into the run's outcome (a stored run's judged again too)."""
        outcome.symptoms = self.symptoms
        outcome.symptoms_outside = self.symptoms_outside
        outcome.passed, outcome.reproduced = self.passed, self.reproduced
        outcome.result, outcome.not_judged = self.result, self.not_judged
        outcome.reasons += self.reasons
        if self.refused_versions:
            outcome.refused_versions = self.refused_versions


def check_played(spark: SparkSession, played: Played) -> Checked:
    """Every place the app's results land in checked (and each hop of a pipeline), the
    worst one's verdict the run's. The run's meta records where Spark ran the check."""
    from kafka_replay.checker.spark import checked_on

    played.history.write_meta(checked_on=checked_on(spark))
    outputs, side_effects = _check(spark, played)
    read = next(iter(outputs.values()))  # the table's, when there is one
    found = _check_hops(spark, played) if played.profile.apps else {}
    hops = {name: hop_summary(checks) for name, checks in found.items()}
    reasons = []
    first = first_wrong(hops)
    if first is not None:
        said = ", ".join(f"{n} {c}" for n, c in hops[first]["anomalies"].items() if c)
        reasons.append(f"records first went wrong at service {first} of the pipeline ({said})")
    if found:  # the symptoms follow the last service's consumption, in what it reads
        read = next(iter(found[list(found)[-1]].values()))
        _write_deliveries(played.history.root, read)
    judged = worst({**outputs, **{f"{n}: {p}": c for n, h in found.items() for p, c in h.items()}})
    dead_letter = played.incident.expect.dead_letter
    dead_lettered = None
    if dead_letter is not None:  # inputs in their place there: the app's dead letters
        dead_lettered = outputs[f"topic {played.topics[dead_letter]}"].totals["delivered"]
    if len(outputs) > 1:  # each judged and reported; the worst decides the gate
        each = ", ".join(f"{name} {c.verdict} ({c.result})" for name, c in outputs.items())
        reasons.append(f"each output judged, the worse for the run: {each}")
    return Checked(read, judged, side_effects, outputs, hops, first, dead_lettered, tuple(reasons))


@dataclass(frozen=True)
class Measured:
    """The evidence of a run and the symptoms measured from it."""

    evidence: Evidence
    symptoms: dict[str, Any]
    #: The same run's symptoms without the app's own reports, where it sent some.
    outside: dict[str, Any] | None


def measure_symptoms(played: Played, checked: Checked) -> Measured:
    """The incident's symptoms, measured from the run's evidence."""
    assert played.cluster is not None
    evidence = _evidence(
        played.history, played.cluster, checked.read, checked.side_effects, checked.judged
    )
    return measured(evidence, played.incident)


def measured(evidence: Evidence, incident: Incident) -> Measured:
    """The incident's symptoms measured from ``evidence`` (and again without the app's own
    reports, where it sent some)."""
    outside = measure(evidence.without_reports(), incident.symptoms) if evidence.app else None
    return Measured(evidence, measure(evidence, incident.symptoms), outside)


def apply_rule(played: Played, checked: Checked, measured: Measured, profile_name: str) -> Judged:
    """The pass/fail rule (:func:`.judge.judge`) over the symptoms and the worst place's check."""
    broker = played.profile.broker
    return rule(
        measured,
        played.incident,
        profile_name,
        played.guarantee,
        played.users_app,
        checked.judged,
        broker,
    )


def rule(
    measured: Measured,
    incident: Incident,
    profile_name: str,
    guarantee: str,
    users_app: bool,
    judged: CheckResult,
    broker: Mapping[str, Any],
) -> Judged:
    """The pass/fail rule over the symptoms ``measured``, the profile and guarantee, and the
    check ``judged`` (the worst place's); then, for a share group's inputs the broker archived,
    the limit of ``broker`` (the run's broker settings) that archived them, so a run judged
    again says it from this same code."""
    evidence, symptoms = measured.evidence, measured.symptoms
    judgement = judge(
        profile=profile_name,
        users_app=users_app,
        signature=incident.signature,
        conditions=incident.conditions,
        symptoms=symptoms,
        guarantee=guarantee,
        check=judged.result,
        verdict=judged.verdict,
        counts=judged.counts,
        held_back=held_back(evidence) if judged.counts.get("unseen_at_deadline") else (),
    )
    reasons = list(judgement.reasons)
    refused = refused_counts(evidence.refused) if evidence.refused else {}
    if refused:  # whatever else the run shows: the brokers would not read the client
        reasons.append(refused_reason(refused))
    if symptoms.get("archived_at_limit"):  # records a share group's broker gave up on
        reasons.append(archived_reason(symptoms, broker))
    return Judged(
        symptoms,
        measured.outside,
        judgement.passed,
        judgement.reproduced,
        judgement.result,
        judgement.not_judged,
        tuple(reasons),
        refused,
    )


def _check_hops(spark: SparkSession, played: Played) -> dict[str, dict[str, CheckResult]]:
    """Each service of a pipeline checked on its own (see :mod:`.pipeline`), its checks kept."""
    cluster = played.cluster
    assert cluster is not None

    def output(topic: str) -> KafkaOutput:
        return _topic_output(cluster, topic, played.output_id, played.profile)

    found = check_services(
        spark,
        played.history.root,
        played.incident,
        played.profile,
        dict(played.topics),
        output,
        cluster.bootstrap_servers,
        played.guarantee,
    )
    kept = {
        name: {**hop_summary(checks), "places": {place: c.to_json() for place, c in checks.items()}}
        for name, checks in found.items()
    }
    (played.history.root / HOP_CHECKS).write_text(json.dumps(kept, indent=2, default=str))
    return found


def _check(
    spark: SparkSession, played: Played
) -> tuple[dict[str, CheckResult], CheckResult | None]:
    """Each place the app's results land in checked against the inputs that belong there, by
    name (see :mod:`.places`): its ``[sink]`` table first, then its output topics and its
    dead-letter topic; and the side-effect topic's check, if it has one."""
    cluster, history, incident, topics = (
        played.cluster,
        played.history,
        played.incident,
        played.topics,
    )
    assert cluster is not None
    compacted = played.profile.compacted
    source = [
        KafkaOutput(cluster.bootstrap_servers, topics[n], compacted=compacted(n))
        for n in incident.named("input")
    ]
    if played.moved_to is not None:  # the copy the app was moved to: what was not mirrored is apart
        where = played.moved_to.bootstrap_servers
        source = [replace(each, bootstrap_servers=where, mirrored=True) for each in source]
    table = None
    sink, database = played.profile.sink, played.database
    if sink is not None and database is not None:
        table = (f"table {sink.relation}", _table_output(spark, sink, database))
    chosen = places(
        incident,
        dict(topics),
        lambda topic: _topic_output(cluster, topic, played.output_id, played.profile),
        table,
        pipeline=bool(played.profile.apps),
    )
    outputs = check_places(spark, history.root, chosen, played.guarantee, source)
    first, *others = outputs.values()
    _write_check(history.root / CHECK, first)
    if table is not None and others:  # the table's is check.json, the one the report reads first
        _write_check(history.root / OUTPUT_TOPIC_CHECK, others[0])
    if len(outputs) > 1:
        checks = {name: check.to_json() for name, check in outputs.items()}
        (history.root / PLACE_CHECKS).write_text(json.dumps(checks, indent=2, default=str))
    _write_deliveries(history.root, first)
    side_effects = None
    if "side_effects" in topics:
        side = KafkaOutput(cluster.bootstrap_servers, topics["side_effects"])
        side_effects = check_run(spark, history.root, side, played.guarantee, source=source)
        _write_check(history.root / SIDE_EFFECTS_CHECK, side_effects)
    return outputs, side_effects


def _write_deliveries(root: Path, check: CheckResult) -> None:
    """The output records the check matched, for the HTML report and the symptoms."""
    with (root / DELIVERIES).open("w") as deliveries:
        deliveries.writelines(json.dumps(d, default=str) + "\n" for d in check.deliveries)


def _write_check(path: Path, check: CheckResult) -> None:
    path.write_text(json.dumps(check.to_json(), indent=2, default=str))


def _table_output(spark: SparkSession, sink: Sink, database: Database) -> JdbcOutput:
    """The app's ``[sink]`` rows, read through PostgreSQL's JDBC driver; a table, column or
    query that is not there, or no rows at all, is an error naming it (not a Spark trace)."""
    from kafka_replay.sinks.database import postgres_jdbc_jar, read_back

    columns = {
        "id_column": sink.id_column,
        "effect_column": sink.effect_column,
        "time_column": sink.time_column,
        "key_column": sink.key_column,
    }
    read_back(database, sink.table, sink.query, columns)
    spark.sql(f"ADD JAR '{postgres_jdbc_jar()}'")  # the driver's class loader sees it too
    return JdbcOutput(
        database.jdbc_url,
        sink.relation,
        "org.postgresql.Driver",
        sink.id_column,
        sink.effect_column,
        sink.effect_each,
        time_column=sink.time_column,
        key_column=sink.key_column,
    )


def _topic_output(
    cluster: Cluster, topic: str, output_id: str | None, profile: Profile
) -> KafkaOutput:
    """The app's output topic, each record's input found by ``--output-id`` or the
    workloads' ``id_field``, else the ``event_id`` header."""
    extractor = load_callable(output_id) if output_id else None
    workloads = profile.workloads.values()
    id_fields = tuple(sorted({w.id_field for w in workloads if w.id_field}))
    return KafkaOutput(cluster.bootstrap_servers, topic, extractor, id_fields)


def _evidence(
    history: RunHistory,
    cluster: Cluster,
    check: CheckResult,
    side_effects: CheckResult | None,
    judged: CheckResult,
) -> Evidence:
    """Everything the symptoms look at, read by the one reader of a run's history; the
    brokers' group events (of every service's group, in a pipeline) are kept as a stream too."""
    logs = cluster.coordinator_logs()
    meta = history.meta()
    groups = [service["group"] for service in meta.get("services", {}).values()]
    group = None
    if logs:
        named = len(groups) > 1  # a pipeline's events say whose group they are
        group = [
            {**e, "group": name} if named else e
            for name in groups or [meta["group"]]
            for e in group_events(logs, name)
        ]
        group.sort(key=lambda event: event["ts"])
    stream = history.stream("group")
    for event in group or []:
        stream.append(event)
    replicas = refused = None
    if logs:
        roles = meta.get("topic_roles", {})
        written = [
            topic
            for name, topic in meta.get("topics", {}).items()
            if roles.get(name) in ("output", "dead_letter")
        ]
        replicas = replica_events(logs, written, elections=meta.get("topics", {}).values())
        replica_stream = history.stream("replicas")
        for event in replicas:
            replica_stream.append(event)
        refused = refused_versions(logs)
        refused_stream = history.stream("refused")
        for event in refused:
            refused_stream.append(event)
    recorded = RecordedRun.read(history.root, outputs=False)  # the check's are in memory
    return Evidence.of(recorded, check, side_effects, group, replicas, refused, judged)
