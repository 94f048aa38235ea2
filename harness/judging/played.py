"""Checking and judging a played run: every place its results land checked by the Spark
checker (and a pipeline's hops), the symptoms measured from its evidence, the pass/fail rule.

The runner (:mod:`kafka_replay.playing.runner`) hands over what it played (:class:`Played`) and
the run's outcome, which these fill in: its verdict, anomalies, places, hops and reasons.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


@dataclass(frozen=True)
class Played:
    """What a played run gives its judges: where it ran, what it wrote, what it promised."""

    cluster: Cluster
    history: RunHistory
    incident: Incident
    profile: Profile
    topics: Mapping[str, str]
    guarantee: str
    output_id: str | None = None  # ``--output-id``: module:function(OutputRecord) -> event_id
    users_app: bool = False
    database: Database | None = None
    #: The cluster a ``fail_over`` moved the app to (``[mirror]``): its copy of the inputs is
    #: what the app could read at the end.
    mirror: Cluster | None = None


@dataclass(frozen=True)
class Checked:
    read: CheckResult  # what the symptoms read: the last service's consumption
    judged: CheckResult  # the place whose check the gate takes: the worst
    side_effects: CheckResult | None


def check_played(spark: SparkSession, played: Played, outcome: Outcome) -> Checked:
    """Every place the app's results land in checked (and each hop of a pipeline), the
    worst one's verdict the run's. The run's meta records where Spark ran the check."""
    from kafka_replay.checker.spark import checked_on

    played.history.write_meta(checked_on=checked_on(spark))
    outputs, side_effects = _check(spark, played)
    read = next(iter(outputs.values()))  # the table's, when there is one
    hops = _check_hops(spark, played, outcome) if played.profile.apps else {}
    if hops:  # the symptoms follow the last service's consumption, in what it reads
        read = next(iter(hops[list(hops)[-1]].values()))
        _write_deliveries(played.history.root, read)
    judged = worst({**outputs, **{f"{n}: {p}": c for n, h in hops.items() for p, c in h.items()}})
    outcome.verdict = judged.verdict
    outcome.check = judged.result
    outcome.anomalies = judged.counts
    dead_letter = played.incident.expect.dead_letter
    if dead_letter is not None:  # inputs in their place there: the app's dead letters
        outcome.dead_lettered = outputs[f"topic {played.topics[dead_letter]}"].totals["delivered"]
    if len(outputs) > 1:  # each judged and reported; the worst decides the gate
        outcome.outputs = {
            name: {"verdict": c.verdict, "check": c.result, "anomalies": c.counts}
            for name, c in outputs.items()
        }
        each = ", ".join(f"{name} {c.verdict} ({c.result})" for name, c in outputs.items())
        outcome.reasons.append(f"each output judged, the worse for the run: {each}")
    return Checked(read, judged, side_effects)


def measure_symptoms(played: Played, checked: Checked, outcome: Outcome) -> Evidence:
    """The incident's symptoms, measured from the run's evidence (and again without the
    app's own reports, where it sent some); the evidence they were measured from."""
    evidence = _evidence(
        played.history, played.cluster, checked.read, checked.side_effects, checked.judged
    )
    measure_into(outcome, evidence, played.incident)
    return evidence


def measure_into(outcome: Outcome, evidence: Evidence, incident: Incident) -> None:
    """The incident's symptoms measured from ``evidence`` into ``outcome`` (and again without
    the app's own reports, where it sent some)."""
    outcome.symptoms = measure(evidence, incident.symptoms)
    if evidence.app:  # what the same run shows without the app's own reports
        outcome.symptoms_outside = measure(evidence.without_reports(), incident.symptoms)


def apply_rule(played: Played, checked: Checked, evidence: Evidence, outcome: Outcome) -> None:
    """The pass/fail rule (:func:`.judge.judge`) over the symptoms and the worst place's check."""
    broker = played.profile.broker
    rule_into(outcome, played.incident, played.users_app, checked.judged, evidence, broker)


def rule_into(
    outcome: Outcome,
    incident: Incident,
    users_app: bool,
    judged: CheckResult,
    evidence: Evidence,
    broker: Mapping[str, Any],
) -> None:
    """The pass/fail rule over ``outcome``'s symptoms, its profile and guarantee, and the
    check ``judged`` (the worst place's), its judgement written into ``outcome``; then, for a
    share group's inputs the broker archived, the limit of ``broker`` (the run's broker
    settings) that archived them, so a run judged again says it from this same code."""
    judgement = judge(
        profile=outcome.profile,
        users_app=users_app,
        signature=incident.signature,
        conditions=incident.conditions,
        symptoms=outcome.symptoms,
        guarantee=outcome.guarantee,
        check=judged.result,
        verdict=judged.verdict,
        counts=judged.counts,
        held_back=held_back(evidence) if judged.counts.get("unseen_at_deadline") else (),
    )
    outcome.passed = judgement.passed
    outcome.reproduced = judgement.reproduced
    outcome.result = judgement.result
    outcome.reasons += judgement.reasons
    outcome.not_judged = judgement.not_judged
    if evidence.refused:  # whatever else the run shows: the brokers would not read the client
        outcome.refused_versions = refused_counts(evidence.refused)
        outcome.reasons.append(refused_reason(outcome.refused_versions))
    if outcome.symptoms.get("archived_at_limit"):  # records a share group's broker gave up on
        outcome.reasons.append(archived_reason(outcome.symptoms, broker))


def _check_hops(
    spark: SparkSession, played: Played, outcome: Outcome
) -> dict[str, dict[str, CheckResult]]:
    """Each service of a pipeline checked on its own (see :mod:`.pipeline`)."""
    cluster = played.cluster

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
    hops = {name: hop_summary(checks) for name, checks in found.items()}
    kept = {
        name: {**hops[name], "places": {place: c.to_json() for place, c in checks.items()}}
        for name, checks in found.items()
    }
    (played.history.root / HOP_CHECKS).write_text(json.dumps(kept, indent=2, default=str))
    outcome.hops = hops
    first = first_wrong(hops)
    if first is not None:
        outcome.first_wrong_hop = first
        said = ", ".join(f"{n} {c}" for n, c in hops[first]["anomalies"].items() if c)
        outcome.reasons.append(
            f"records first went wrong at service {first} of the pipeline ({said})"
        )
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
    compacted = played.profile.compacted
    source = [
        KafkaOutput(cluster.bootstrap_servers, topics[n], compacted=compacted(n))
        for n in incident.named("input")
    ]
    if played.mirror is not None:  # the copy the app was moved to: what was not mirrored is apart
        where = played.mirror.bootstrap_servers
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
