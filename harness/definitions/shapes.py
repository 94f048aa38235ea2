"""A service's shape as a definition gives it: topics by name with their roles, a pipeline's
services, and an ``--expect`` file for the catalog against a team's service (see
docs/service-shapes.md). Every mistake names the file and key before anything starts."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .expectations import read_expectations
from .model import (
    TOPIC_ROLES,
    AppDefinition,
    DefinitionError,
    Incident,
    Profile,
    toml_error,
    topic_names,
)
from .table import AS_WRITTEN, Origin, Table

if TYPE_CHECKING:
    from kafka_replay.workload import Workload


#: A topic's name in a definition: what ``REPLAY_TOPIC_<NAME>`` and ``{topic.<name>}`` carry.
_TOPIC_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def read_topics(
    table: Table, has_sink: bool
) -> tuple[dict[str, int], dict[str, str], dict[str, int]]:
    """``[topics]``: each topic's partitions and role, by name, and the replication factor of
    those that give one.

    The short form ``input = 3`` is a topic named after its role; ``[topics.NAME]`` takes
    ``partitions``, a ``role`` and optionally ``replicas``. At least one input, and an output or
    dead-letter topic (or a ``[sink]``) for the results.
    """
    partitions: dict[str, int] = {}
    roles: dict[str, str] = {}
    replicas: dict[str, int] = {}
    for name in list(table.data):
        _topic_name(table, name)
        if isinstance(table.data[name], dict):
            partitions[name], roles[name], given = _named_topic(table, name)
            if given is not None:
                replicas[name] = given
        elif name in TOPIC_ROLES:
            partitions[name] = table.get(name, int)
            roles[name] = name
        else:
            raise table.fail(
                name,
                f"give [topics.{name}] with partitions and a role; the short form NAME = "
                f"PARTITIONS is for {', '.join(TOPIC_ROLES)}",
            )
    partitions = {name: count for name, count in partitions.items() if count > 0}
    table.finish()
    written = [name for name in partitions if roles[name] in ("output", "dead_letter")]
    if not any(roles[name] == "input" for name in partitions):
        raise table.fail("", "needs an input partition count (input = N, or a topic of role input)")
    if not written and not has_sink:
        raise table.fail("", "needs an output partition count (or a [sink] the app writes rows to)")
    kept = {name: replicas[name] for name in partitions if name in replicas}
    return partitions, {name: roles[name] for name in partitions}, kept


def _topic_name(table: Table, name: str) -> None:
    if not _TOPIC_NAME.match(name):
        raise table.fail(
            name, "a topic's name is lower-case letters, digits, _ and -, from a letter on"
        )


def _named_topic(table: Table, name: str) -> tuple[int, str, int | None]:
    """``[topics.NAME]``: its partitions, its role and its replication factor (None: the
    incident's, ``min(3, brokers)``)."""
    _topic_name(table, name)
    topic = table.table(name)
    partitions, role = topic.get("partitions", int), topic.get("role", str)
    replicas = topic.get("replicas", int, None)
    topic.finish()
    if partitions < 1:
        raise topic.fail("partitions", f"must be 1 or more, got {partitions}")
    if role not in TOPIC_ROLES:
        raise topic.fail("role", f"must be one of {', '.join(TOPIC_ROLES)}")
    if replicas is not None and replicas < 1:
        raise topic.fail("replicas", f"must be 1 or more, got {replicas}")
    return partitions, role, replicas


def read_expect_file(path: Path, pipeline: bool = False) -> dict[str, Any]:
    """An ``--expect`` file's TOML: ``[topics.NAME]`` tables the app writes besides the
    incident's, and an ``[expect]`` table; ``pipeline`` (an exploration's): ``[apps.NAME]``
    tables too, the services around the one explored. An error names the file and key."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(path, "(file)", f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(path, *toml_error(text, exc)) from None
    top = Table(path, "", data)
    topics = top.table("topics", {})
    for name in list(topics.data):
        if not isinstance(topics.data[name], dict):
            raise topics.fail(name, "give [topics.NAME] with partitions and a role")
        _named_topic(topics, name)
    top.table("expect", {})
    if pipeline:
        apps = top.table("apps", {})
        for name in apps.data:
            apps.table(name)  # each service a table; its fields are checked as a definition's
    top.finish()
    return data


def with_expect_file(incident: Incident, path: Path) -> Incident:
    """``incident`` with an ``--expect`` file's topics added and its ``[expect]`` instead of
    the incident's: what a team's service makes of each input, for the catalog against it."""
    data = read_expect_file(path)
    partitions, roles = dict(incident.topics), {n: incident.role(n) for n in incident.topics}
    replicas = dict(incident.replicas)
    topics = Table(path, "topics", data.get("topics", {}))
    for name in list(topics.data):
        if name in partitions:
            raise topics.fail(name, f"{incident.name} has a topic {name!r} already")
        partitions[name], roles[name], given = _named_topic(topics, name)
        if given is not None:
            replicas[name] = given
    top = Table(path, "", {"expect": data.get("expect", {})})
    expect = read_expectations(top, topic_names(partitions, roles), roles)
    check_replicas(path, replicas, incident.brokers)
    return replace(incident, topics=partitions, roles=roles, replicas=replicas, expect=expect)


def check_replicas(path: Path, replicas: Mapping[str, int], brokers: int) -> None:
    """A topic's ``replicas`` fit in the incident's cluster."""
    for name, count in replicas.items():
        if count > brokers:
            raise DefinitionError(
                path,
                f"topics.{name}.replicas",
                f"{count} replicas need {count} brokers; the incident has {brokers} (brokers = N)",
            )


def pipeline_services(
    path: Path,
    profile: Profile,
    names: Mapping[str, str],
    roles: Mapping[str, str],
    origin: Origin = AS_WRITTEN,
) -> Profile:
    """A pipeline's services, upstream first: every topic they name is the incident's, every
    input and internal topic is read by one of them, every internal topic written by one, and
    no service feeds itself through the others (a cycle). ``origin``: where the profile's keys
    were written, to name a mistake there."""
    internal = [name for name, role in roles.items() if role == "internal"]
    if not profile.apps:
        if internal:
            raise DefinitionError(
                path,
                f"topics.{internal[0]}",
                "an internal topic is between two services of a "
                "pipeline ([apps.NAME] with reads and writes); this incident has one [app]",
            )
        return profile
    where = origin.place(("apps",))
    resolved = {}
    for key, app in profile.apps.items():
        for field_name in ("reads", "writes"):
            for topic in getattr(app, field_name):
                if topic not in names:
                    raise DefinitionError(
                        path,
                        origin.place(("apps", key, field_name)),
                        f"no topic {topic!r}; topics: {', '.join(names)}",
                    )
        reads = tuple(names[t] for t in app.reads)
        resolved[key] = replace(app, reads=reads, writes=tuple(names[t] for t in app.writes))
    read = {t for app in resolved.values() for t in app.reads}
    written = {t for app in resolved.values() for t in app.writes}
    for name, role in roles.items():
        if role in ("input", "internal") and name not in read:
            raise DefinitionError(
                path, where, f"no service reads the {role} topic {name!r}: name it in one's reads"
            )
        if role in ("internal", "output") and name not in written:
            raise DefinitionError(
                path, where, f"no service writes the {role} topic {name!r}: name it in one's writes"
            )
    order = _upstream_first(path, where, resolved)
    apps = {key: resolved[key] for key in order}
    return replace(profile, apps=apps, app=apps[order[0]])


def _upstream_first(path: Path, where: str, apps: Mapping[str, AppDefinition]) -> list[str]:
    """The services in the order records flow through them; a cycle is an error naming it."""
    feeds = {
        key: [other for other, app in apps.items() if set(app.reads) & set(apps[key].writes)]
        for key in apps
    }
    order: list[str] = []
    visiting: list[str] = []

    def visit(key: str) -> None:
        if key in order:
            return
        if key in visiting:
            cycle = [*visiting[visiting.index(key) :], key]
            raise DefinitionError(
                path, where, f"the services feed each other in a cycle: {' -> '.join(cycle)}"
            )
        visiting.append(key)
        for downstream in feeds[key]:
            visit(downstream)
        visiting.pop()
        order.insert(0, key)

    for key in apps:
        visit(key)
    return order


def check_workload_topic(
    path: Path,
    key: str,
    workload: Workload,
    names: Mapping[str, str],
    partitions: Mapping[str, int],
    roles: Mapping[str, str],
    origin: Origin = AS_WRITTEN,
) -> None:
    """A workload writes to an input topic of the incident, which holds its capture's
    partitions; ``origin``: where the profile's keys were written, to name a mistake there."""
    inputs = [name for name in partitions if roles[name] == "input"]
    topic = names.get(workload.topic or "input")
    if topic not in inputs:
        raise DefinitionError(
            path,
            origin.place(("workloads", key, "topic")),
            f"{workload.topic!r} is not an input topic of this incident ({', '.join(inputs)})",
        )
    recorded = workload.parameters.get("partitions") if "recorded" in workload.parameters else None
    if recorded and recorded > partitions[topic]:
        raise DefinitionError(
            path,
            origin.place(("workloads", key, "recorded")),
            f"the capture holds {recorded} partitions; topics.{topic} has "
            f"{partitions[topic]}: give the input at least as many",
        )
