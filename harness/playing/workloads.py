"""What a run's workloads carry beyond their definition: the marks of the inputs a correct
service puts elsewhere (``[expect]``), a team's messages (``--payload``), and a schema
registry's framing (a workload with ``registry_schema``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_replay.apps import load_callable
from kafka_replay.definitions.model import Incident, Profile
from kafka_replay.history import RunHistory

if TYPE_CHECKING:
    from kafka_replay.workload.schema_registry import SchemaRegistry


def with_expectations(profile: Profile, incident: Incident) -> Profile:
    """The profile whose workloads mark the inputs ``[expect]``'s predicates name (``bad``,
    ``filtered``) for the place a correct service puts them."""
    from kafka_replay.workload.expect import marked

    chosen = incident.expect.predicates
    if not chosen:
        return profile
    predicates = {place: (spec, load_callable(spec)) for place, spec in chosen.items()}
    names = incident.topic_names()
    workloads = {
        key: marked(workload, names[workload.topic or "input"], predicates)
        for key, workload in profile.workloads.items()
    }
    return replace(profile, workloads=workloads)


def with_payload(profile: Profile, payload: Path) -> Profile:
    """The profile whose workloads carry the messages of a ``--payload`` file: each keeps its
    keys, identities, timing and pauses."""
    from kafka_replay.definitions.workload_table import read_payload_file

    source = read_payload_file(payload)
    workloads = {name: source.values_for(w) for name, w in profile.workloads.items()}
    return replace(profile, workloads=workloads)


def needs_registry(profile: Profile) -> bool:
    """Whether a workload's values go behind a schema registry's framing."""
    return any(w.registry_schema for w in profile.workloads.values())


def start_registry(history: RunHistory, progress: Callable[[str], None]) -> SchemaRegistry:
    """A schema registry of the run's own, started (the caller stops it)."""
    from kafka_replay.workload.schema_registry import SchemaRegistry

    progress("starting a schema registry")
    registry = SchemaRegistry(history.logs_dir)
    registry.start()
    history.write_meta(schema_registry=registry.url)
    return registry


def registered(profile: Profile, topics: Mapping[str, str], registry: SchemaRegistry) -> Profile:
    """The profile whose workloads ``registry`` frames: their schemas registered under
    ``TOPIC-value`` (each workload's topic), every value behind the magic byte and id."""
    from kafka_replay.workload.schema_registry import frame

    framed = {}
    for name, workload in profile.workloads.items():
        if workload.registry_schema is not None:
            topic = topics[workload.topic or "input"]
            schema_id = registry.register(f"{topic}-value", *workload.registry_schema)
            workload = workload.framed(frame(schema_id, b""))
        framed[name] = workload
    return replace(profile, workloads=framed)
