"""A pipeline of services (``[apps.NAME]``): which place a team's app takes, what a run says of
its services, and each service checked on its own so the report names the first one where
records went wrong."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.apps import AppSpec
from kafka_replay.checker import CheckResult, KafkaOutput

from .model import AppDefinition, Incident, Profile
from .places import check_places, places, worst

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: ``--app NAME=COMMAND``: a team's service for one place of a pipeline.
_NAMED_APP = re.compile(r"^([a-z][a-z0-9_-]*)=(\S.*)$", re.DOTALL)
#: What a service did wrong to records: the anomalies that name a service of a pipeline.
WRONG = ("lost", "misrouted", "duplicate", "unexpected")


def users_app(given: str, services: Mapping[str, AppDefinition]) -> tuple[str, str]:
    """``(service, command)`` of ``--app``: ``NAME=COMMAND`` puts the command in service
    ``NAME``'s place, or in the last service's where the incident has no ``NAME`` (every
    one-app incident); a plain command takes the last service's place."""
    match = _NAMED_APP.match(given.strip())
    if match is None:
        return list(services)[-1], given
    name, command = match.groups()
    return (name if name in services else list(services)[-1]), command


def services_meta(
    services: Mapping[str, AppDefinition],
    specs: Mapping[str, AppSpec],
    groups: Mapping[str, str],
    label: Callable[[AppSpec], str],
) -> dict[str, dict[str, Any]]:
    """A pipeline's services in ``run.json``: each one's group, topics, app and command."""
    return {
        name: {
            "group": groups[name],
            "reads": list(app.reads),
            "writes": list(app.writes),
            "app": label(specs[name]),
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
        source = [KafkaOutput(bootstrap_servers, topics[topic]) for topic in app.reads]
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
