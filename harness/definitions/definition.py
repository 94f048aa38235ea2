"""Incident definitions: TOML files read into checked dataclasses.

A definition names everything a run needs (broker and client config, topics, workloads, the
app, the steps with their faults, the declared guarantee) and how to tell that the post's
failure happened (the symptom ``signature``). Every mistake is reported with the file, the
field and what is allowed, before anything starts.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.apps.client_config import check_client_config
from kafka_replay.apps.supervisor import RESTART_MODES, parse_restart
from kafka_replay.checker import GUARANTEES

from .cluster_needs import read_broker_needs, read_brokers, read_features
from .command_text import check_commands
from .expectations import read_expectations
from .model import (
    COMPARISONS,
    GROUP_TYPES,
    PROFILES,
    WRITTEN_ROLES,
    AppDefinition,
    Condition,
    DefinitionError,
    Incident,
    Mirror,
    Profile,
    Sink,
    Step,
    YourApp,
    toml_error,
    topic_names,
)
from .scale import scale_definition
from .shapes import check_replicas, check_workload_topic, pipeline_services, read_topics
from .table import Origin, Table
from .vocabulary import StepContext, step_kinds, symptom_names
from .workload_table import workload_of

if TYPE_CHECKING:
    from kafka_replay.workload import Workload

#: What a profile may change.
OVERRIDABLE = ("broker", "client", "producer", "app", "apps", "workloads", "sink", "topic_config")


def parse_condition(
    source: Path, where: str, symptom: str, text: Any, known: set[str]
) -> Condition:
    if symptom not in known:
        raise DefinitionError(
            source, where, f"unknown symptom; known symptoms: {', '.join(sorted(known))}"
        )
    parts = str(text).split() if isinstance(text, str) else []
    if len(parts) != 2 or parts[0] not in COMPARISONS:
        raise DefinitionError(
            source,
            where,
            f"must be a string like '>= 1' or '== false' (operators: {', '.join(COMPARISONS)})",
        )
    raw = parts[1].lower()
    value: float | bool
    if raw in ("true", "false"):
        value = raw == "true"
    else:
        try:
            value = float(raw)
        except ValueError:
            problem = f"{parts[1]!r} is not a number, true or false"
            raise DefinitionError(source, where, problem) from None
    return Condition(symptom, parts[0], value)


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _config(table: Table, name: str) -> dict[str, Any]:
    config = table.get(name, dict, {})
    for key, value in config.items():
        if not isinstance(value, (str, int, float, bool)):
            raise DefinitionError(
                table.source, table.path(name, key), "must be a string, number or boolean"
            )
    return dict(config)


def _client(table: Table, name: str = "client") -> dict[str, Any]:
    """Client settings (``[client]``, a service's ``client``), checked as the app gets them; a
    mistake is named at the table that holds the first setting at fault (a profile's own, or
    the one it merges over)."""
    client = _config(table, name)
    problem = check_client_config(client)
    if problem:
        wrong = [key for key, value in client.items() if check_client_config({key: value})]
        where = table.holder(name, wrong[0]) if wrong else table.path(name)
        raise DefinitionError(table.source, where, problem)
    return client


def _step(
    source: Path, index: int, data: Any, context: StepContext, origin: Origin | None = None
) -> Step:
    """``steps[index]``; ``origin``: where its fields were written, when some come from
    elsewhere (``[your_app.steps.KIND]``)."""
    table = Table(source, f"steps[{index}]", data, origin)
    do = table.get("do", str)
    kinds = step_kinds()
    if do not in kinds:
        raise DefinitionError(
            source, table.path("do"), f"unknown step {do!r}; steps: {', '.join(kinds)}"
        )
    kind = kinds[do]
    options = {name: table.get(name, spec.kind, spec.default) for name, spec in kind.fields.items()}
    table.finish()
    for name, spec in kind.fields.items():
        if spec.choices and options[name] not in spec.choices:
            raise DefinitionError(
                source, table.path(name), f"must be one of {', '.join(spec.choices)}"
            )
    topic = options.get("topic")
    if "topic" in kind.fields and context.partitions and topic not in context.partitions:
        names = ", ".join(context.partitions)
        raise DefinitionError(
            source, table.path("topic"), f"the incident has no {topic} topic; allowed: {names}"
        )
    if "app" in kind.fields:
        _step_app(source, table.path("app"), do, options["app"], context.apps)
    problem = kind.validate(options, context) if kind.validate else None
    if problem:
        raise DefinitionError(source, table.path(problem[0]), problem[1])
    return Step(do, options)


#: Steps that act on every service of a pipeline unless they name one.
EVERY_SERVICE = ("start_apps", "stop_apps")


def _step_app(source: Path, where: str, do: str, app: str | None, apps: tuple[str, ...]) -> None:
    """A step's ``app`` (at ``where``) names a service of the pipeline; one that acts on a
    single service must name it where there are several."""
    if app is None and len(apps) > 1 and do not in EVERY_SERVICE:
        raise DefinitionError(
            source, where, f"name the service it acts on: one of {', '.join(apps)}"
        )
    if app is not None and app not in apps:
        raise DefinitionError(source, where, f"no service {app!r}; services: {', '.join(apps)}")


def _origin(name: str, base: dict[str, Any], override: dict[str, Any]) -> Origin:
    """Where each key of profile ``name``'s tables was written: its own table, or the top
    level's it merges over."""
    changes = {key: value for key, value in override.items() if key != "description"}
    return Origin(base, changes, f"profiles.{name}")


def _profile(source: Path, name: str, base: dict[str, Any], override: dict[str, Any]) -> Profile:
    """A profile: its own tables merged over the top level's, each mistake named where the
    key was written (``workloads.w.count``, or ``profiles.NAME.workloads.w.count``)."""
    own = Table(source, f"profiles.{name}", override)
    description = own.get("description", str)
    own.read.update(OVERRIDABLE)
    own.finish()
    origin = _origin(name, base, override)
    merged = _merge(base, dict(origin.override))
    table = Table(source, "", merged, origin)
    apps = {}
    if "apps" in merged:
        services = table.table("apps")
        apps = {key: _app(services.table(key), pipeline=True) for key in list(services.data)}
        if not apps:
            raise services.fail("", "needs at least one [apps.NAME] table")
        services.finish()
    if "app" in merged or not apps:
        if apps:
            raise table.fail("app", "give [app] (one app) or [apps.NAME] (a pipeline), not both")
        definition = _app(table.table("app"), pipeline=False)
    else:
        definition = next(iter(apps.values()))
    workloads = table.table("workloads")
    built = {key: _workload(workloads, key) for key in list(workloads.data)}
    client = _client(table)
    profile = Profile(
        name,
        description,
        _config(table, "broker"),
        client,
        _config(table, "producer"),
        definition,
        built,
        _sink(table.table("sink", None)) if "sink" in table.data else None,
        apps,
        _topic_config(table),
    )
    table.finish()
    return profile


def _topic_config(table: Table) -> dict[str, dict[str, Any]]:
    """``[topic_config.NAME]``: each topic's Kafka configs (checked against the topics once
    they are read: :func:`_check_topic_config`)."""
    configs = table.table("topic_config", {})
    found = {name: _config(configs, name) for name in list(configs.data)}
    configs.finish()
    return found


def _check_topic_config(path: Path, profiles: dict[str, Profile], topics: set[str]) -> None:
    for profile in profiles.values():
        for name in profile.topic_config:
            if name not in topics:
                raise DefinitionError(
                    path,
                    f"topic_config.{name}",
                    f"names no topic of [topics] (one of {', '.join(sorted(topics))})",
                )


def _app(app: Table, pipeline: bool) -> AppDefinition:
    """``[app]``, or one service of a pipeline (``[apps.NAME]``: with the topics it reads and
    writes, and its own ``client`` settings)."""
    image = app.get("image", str, None)
    definition = AppDefinition(
        command=app.get("command", str, "" if image else ...),
        instances=app.get("instances", int, 1),
        restart_delay_s=float(app.get("restart_delay_s", (int, float), 0.5)),
        restart=app.get("restart", str, "always"),
        jvm=app.get("jvm", str, None),
        image=image,
    )
    check_commands(app, definition.command, definition.jvm)
    if image is not None and (not image.strip() or any(c.isspace() for c in image)):
        raise app.fail("image", f"{image!r} is not an image name (like team/orders:1)")
    if image is not None and definition.jvm is not None:
        raise app.fail("jvm", "an app from an image brings its own Java: give image or jvm")
    try:
        parse_restart(definition.restart)
    except ValueError:
        raise app.fail("restart", f"must be one of {', '.join(RESTART_MODES)}") from None
    if pipeline:
        topics = {key: app.get(key, list) for key in ("reads", "writes")}
        for key, names in topics.items():
            if not names or not all(isinstance(name, str) for name in names):
                raise app.fail(key, "must be a list of the incident's topic names")
        client = _client(app)
        definition = replace(
            definition,
            reads=tuple(topics["reads"]),
            writes=tuple(topics["writes"]),
            client=client,
        )
    app.finish()
    return definition


#: A SQL name the checker reads: a table (``schema.table`` too) or a column.
_SQL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")


def _sink(table: Table) -> Sink:
    """``[sink]``: the tables to create, and where the checker finds each input's rows."""
    sink = Sink(
        tables=table.get("tables", str),
        table=table.get("table", str, None),
        query=table.get("query", str, None),
        id_column=table.get("id_column", str, "event_id"),
        effect_column=table.get("effect_column", str, None),
        effect_each=table.number("effect_each", None, 0, above=True),
        time_column=table.get("time_column", str, None),
        key_column=table.get("key_column", str, None),
    )
    table.finish()
    if (sink.table is None) == (sink.query is None):
        raise table.fail("table", "give the table the app writes (table) or a query, one of them")
    for name in ("table", "id_column", "effect_column", "time_column", "key_column"):
        value = getattr(sink, name)
        if value is not None and not _SQL_NAME.match(value):
            raise table.fail(name, f"{value!r} is not a table or column name")
    if sink.effect_each is not None and sink.effect_column is None:
        raise table.fail("effect_each", "needs effect_column: the column it is an amount of")
    return sink


def _drift(path: Path, table: dict[str, Any], symptoms: tuple[str, ...]) -> dict[str, float]:
    """``[drift]``: per symptom, the relative change between two setups that is still noise."""
    drift = {}
    for symptom, value in table.items():
        if symptom not in symptoms:
            raise DefinitionError(
                path,
                f"drift.{symptom}",
                f"is not a symptom this incident measures ({', '.join(symptoms)})",
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise DefinitionError(
                path,
                f"drift.{symptom}",
                "must be a number of 0 or more: the relative change (0.5 is 50 %) beyond which "
                "`kafka-replay compare` calls a move drift",
            )
        drift[symptom] = float(value)
    return drift


def _your_app(
    path: Path,
    data: dict[str, Any] | None,
    steps_data: list[Any],
    context: StepContext,
    known: set[str],
) -> YourApp | None:
    """``[your_app]``: what the incident tests when ``--app`` gives a team's app."""
    if data is None:
        return None
    table = Table(path, "your_app", data)
    tests = table.get("tests", str)
    applies = table.get("applies", bool, True)
    overrides = table.get("steps", dict, {})
    used = [step.get("do") for step in steps_data if isinstance(step, dict)]
    for do, fields in overrides.items():
        if do not in used or not isinstance(fields, dict):
            raise DefinitionError(
                path,
                f"your_app.steps.{do}",
                f"must be a table of fields of a step this incident has ({', '.join(used)})",
            )
    steps = ()
    if overrides:  # each step read again with its new fields: checked as the incident's are,
        steps = tuple(  # a mistake in a new field named where it was written
            _step_with(path, i, step, overrides.get(step["do"], {}), context)
            for i, step in enumerate(steps_data)
        )
    without = table.get("without_client", list, [])
    if not all(isinstance(key, str) for key in without):
        raise DefinitionError(path, "your_app.without_client", "must be a list of setting names")
    signature = tuple(
        parse_condition(path, f"your_app.signature.{k}", k, v, known)
        for k, v in table.get("signature", dict, {}).items()
    )
    producer = _config(table, "producer")
    brokers = table.get("brokers", int, None)
    table.finish()
    if brokers is not None:
        brokers = read_brokers(path, brokers, "your_app.brokers")
    return YourApp(tests, applies, steps, tuple(without), producer, signature, brokers)


def _step_with(
    path: Path, index: int, step: dict[str, Any], fields: dict[str, Any], context: StepContext
) -> Step:
    """Step ``index`` read again with ``fields`` over its own, a mistake in one of them named
    where it was written (``your_app.steps.KIND.field``)."""
    origin = Origin(step, fields, f"your_app.steps.{step['do']}", f"steps[{index}]", deep=False)
    return _step(path, index, {**step, **fields}, context, origin)


def load_incident(path: Path, scale: int = 1) -> Incident:
    """Read and check one definition file; ``scale`` multiplies its records (see ``scale``)."""
    known_symptoms = symptom_names()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DefinitionError(path, "(file)", str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise DefinitionError(
            path, "(file)", f"is not UTF-8 text (byte {exc.object[exc.start]:#x} at {exc.start})"
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where, problem = toml_error(text, exc)
        raise DefinitionError(path, where, problem) from exc
    data = scale_definition(data, scale)
    top = Table(path, "", data)
    name = top.get("name", str)
    if name != path.stem:
        raise DefinitionError(path, "name", f"must match the file name ({path.stem!r})")
    guarantee = top.get("guarantee", str)
    if guarantee not in GUARANTEES:
        raise DefinitionError(path, "guarantee", f"must be one of {', '.join(GUARANTEES)}")
    partitions, roles, replicas = read_topics(top.table("topics"), has_sink="sink" in data)
    base = {key: data[key] for key in OVERRIDABLE if key in data}
    top.read.update(base)
    if "app" not in base and "apps" not in base:
        raise DefinitionError(path, "app", "is required ([app], or [apps.NAME] for a pipeline)")
    if "workloads" not in base:
        raise DefinitionError(path, "workloads", "is required")
    profiles_table = top.table("profiles")
    missing = [p for p in PROFILES if p not in profiles_table.data]
    extra = [p for p in profiles_table.data if p not in PROFILES]
    if missing or extra:
        raise DefinitionError(
            path,
            "profiles",
            f"must define exactly {' and '.join(PROFILES)} (got {sorted(profiles_table.data)})",
        )
    overrides = {p: profiles_table.get(p, dict) for p in PROFILES}
    profiles = {p: _profile(path, p, base, overrides[p]) for p in PROFILES}
    origins = {p: _origin(p, base, overrides[p]) for p in PROFILES}
    _check_topic_config(path, profiles, set(partitions))
    names = topic_names(partitions, roles)
    for key, profile in profiles.items():
        for workload_key, workload in profile.workloads.items():
            check_workload_topic(
                path, workload_key, workload, names, partitions, roles, origins[key]
            )
    profiles = {
        key: pipeline_services(path, p, names, roles, origins[key]) for key, p in profiles.items()
    }
    brokers = read_brokers(path, top.get("brokers", int, 1))
    check_replicas(path, replicas, brokers)
    named = {name: partitions[topic] for name, topic in names.items()}
    services = tuple(profiles["vulnerable"].services)
    context = StepContext(set(profiles["vulnerable"].workloads), named, brokers, services)
    steps_data = top.get("steps", list)
    steps = tuple(_step(path, i, s, context) for i, s in enumerate(steps_data))
    conditions = tuple(
        parse_condition(path, f"conditions.{k}", k, v, known_symptoms)
        for k, v in top.get("conditions", dict, {}).items()
    )
    signature_data = top.get("signature", dict)
    if not signature_data:
        raise DefinitionError(path, "signature", "needs at least one symptom")
    signature = tuple(
        parse_condition(path, f"signature.{k}", k, v, known_symptoms)
        for k, v in signature_data.items()
    )
    reported = top.get("report", list, [])
    for i, symptom in enumerate(reported):
        if symptom not in known_symptoms:
            raise DefinitionError(path, f"report[{i}]", f"unknown symptom {symptom!r}")
    your_app = _your_app(path, top.get("your_app", dict, None), steps_data, context, known_symptoms)
    theirs = your_app.signature if your_app else ()
    measured = [c.symptom for c in signature + conditions + theirs]
    symptoms = tuple(dict.fromkeys([*measured, *reported]))
    drift = _drift(path, top.get("drift", dict, {}), symptoms)
    incident = Incident(
        name=name,
        title=top.get("title", str),
        post=top.get("post", str),
        guarantee=guarantee,
        time_scale=top.get("time_scale", str),
        topics=partitions,
        replicas=replicas,
        steps=steps,
        conditions=conditions,
        signature=signature,
        profiles=profiles,
        source=path,
        seed=top.get("seed", int, 0),
        brokers=brokers,
        symptoms=symptoms,
        drift=drift,
        broker_needs=read_broker_needs(path, top.get("broker_needs", dict, {}), profiles),
        your_app=your_app,
        group_type=_group_type(top),
        roles=roles,
        expect=read_expectations(top, names, roles),
        mirror=_mirror(top, steps, partitions, roles, "sink" in data),
        features=read_features(path, top.get("features", dict, {})),
    )
    top.finish()
    return incident


def _mirror(
    top: Table,
    steps: tuple[Step, ...],
    partitions: Mapping[str, int],
    roles: Mapping[str, str],
    has_sink: bool,
) -> Mirror | None:
    """``[mirror]``: MirrorMaker 2's compressed intervals; what a ``fail_over`` step needs."""
    failing_over = [i for i, step in enumerate(steps) if step.do == "fail_over"]
    if failing_over and "mirror" not in top.data:
        raise DefinitionError(
            top.source, f"steps[{failing_over[0]}]", "fail_over needs a [mirror] to move to"
        )
    if len(failing_over) > 1:
        raise DefinitionError(
            top.source, f"steps[{failing_over[1]}]", "a run fails over once, to its one mirror"
        )
    if "mirror" not in top.data:
        return None
    table = top.table("mirror")
    mirror = Mirror(
        interval_s=table.number("interval_s", 2.0, 1),
        offset_lag_max=table.get("offset_lag_max", int, 100),
    )
    table.finish()
    if mirror.offset_lag_max < 1:
        raise table.fail("offset_lag_max", f"must be at least 1, got {mirror.offset_lag_max}")
    written = [name for name in partitions if roles.get(name, name) in WRITTEN_ROLES]
    if written or not has_sink:
        said = f"; it writes {', '.join(written)}" if written else ""
        raise table.fail(
            "",
            "a run with a mirror is judged on the rows of its [sink] table (results written to "
            f"topics on two clusters are not judged yet){said}",
        )
    produced = [i for i, step in enumerate(steps) if step.do == "produce"]
    if failing_over and produced and produced[-1] > failing_over[0]:
        problem = "no produce after fail_over: the workload is acknowledged by the primary"
        raise DefinitionError(
            top.source, f"steps[{produced[-1]}]", problem + ", whose copy the mirror holds"
        )
    return mirror


def _workload(workloads: Table, key: str) -> Workload:
    """``[workloads.KEY]``: a workload, the topic it is written to (``topic``; default: the
    first input) and how old its records' timestamps are (``timestamp_age_s``)."""
    table = workloads.table(key)
    topic = table.data.get("topic")
    if topic is not None and not isinstance(topic, str):
        raise table.fail("topic", "must be a topic's name")
    age = table.data.get("timestamp_age_s")
    if age is not None and (isinstance(age, bool) or not isinstance(age, (int, float))):
        raise table.fail("timestamp_age_s", "must be a number of seconds")
    if age is not None and age < 0:
        raise table.fail("timestamp_age_s", f"must be 0 or more seconds, got {age}")
    workload = workload_of(table.without("topic", "timestamp_age_s"))
    if age is not None:
        workload = replace(workload, timestamp_age_s=float(age))
    return replace(workload, topic=topic) if topic else workload


def _group_type(top: Table) -> str:
    """``[group] type``: what kind of group the app's instances form (default ``consumer``)."""
    group = top.table("group") if "group" in top.data else None
    if group is None:
        return "consumer"
    kind = group.get("type", str, "consumer")
    group.finish()
    if kind not in GROUP_TYPES:
        raise group.fail("type", f"unknown group type {kind!r}; allowed: {', '.join(GROUP_TYPES)}")
    return kind
