"""A pipeline of services (``[apps.NAME]``): what a run says of its services, and each service
checked on its own so the report names the first one where records went wrong. Which place a
team's app takes is :mod:`.app_option`'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.apps import AppSpec
from kafka_replay.checker import CheckResult, KafkaOutput
from kafka_replay.definitions.model import AppDefinition, Incident, Profile

from .places import check_places, places, worst

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: What a service did wrong to records: the anomalies that name a service of a pipeline.
WRONG = ("lost", "misrouted", "duplicate", "unexpected")


def services_meta(
    services: Mapping[str, AppDefinition],
    specs: Mapping[str, AppSpec],
    groups: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """A pipeline's services in ``run.json``: each one's group, topics, app and command."""
    return {
        name: {
            "group": groups[name],
            "reads": list(app.reads),
            "writes": list(app.writes),
            "app": specs[name].name,
            "command": list(specs[name].argv) or specs[name].target,
        }
        for name, app in services.items()
    }


def check_services(
    spark: SparkSession,
    run_dir: Path,
    incident: Incident,
    profile: Profile,
    topics: Mapping[str, str],
    output: Callable[[str], KafkaOutput],
    bootstrap_servers: str,
    guarantee: str,
) -> dict[str, dict[str, CheckResult]]:
    """Each service checked on its own, upstream first, by service and place: against what it
    reads (the acknowledged inputs of the workload's topics, every record of the topics
    between services), with its group's commits."""
    found = {}
    for name, app in profile.apps.items():
        chosen = places(incident, topics, output, hop=app)
        source = [
            KafkaOutput(bootstrap_servers, topics[topic], compacted=profile.compacted(topic))
            for topic in app.reads
        ]
        found[name] = check_places(spark, run_dir, chosen, guarantee, source)
    return found


def hop_summary(checks: Mapping[str, CheckResult]) -> dict[str, Any]:
    """One service's checks in a report: the worst one's verdict and check, and what went
    wrong to records in any of its places."""
    judged = worst(checks)
    anomalies = {name: sum(check.counts[name] for check in checks.values()) for name in WRONG}
    return {"verdict": judged.verdict, "check": judged.result, "anomalies": anomalies}


def first_wrong(hops: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The first service, upstream first, whose records went wrong; None when none did."""
    return next((name for name, hop in hops.items() if any(hop["anomalies"].values())), None)
