"""The application contract: how the app under test learns where Kafka is and what to do.

An app is a command line or a Python ``module:function``; either runs as its own process and
receives these environment variables (the names are a stable interface):

============================ ============================================================
``KAFKA_BOOTSTRAP_SERVERS``  where the brokers are
``REPLAY_INPUT_TOPIC``       topic to consume
``REPLAY_OUTPUT_TOPIC``      topic to produce results to
``REPLAY_GROUP_ID``          consumer group (a share group's id when the incident's
                             ``[group] type`` is ``share``: read it with a share consumer)
``REPLAY_CLIENT_PROPERTIES`` path of a Java ``.properties`` file of the client settings the
                             incident imposes, in Apache Kafka's names (any Kafka client)
``REPLAY_CLIENT_CONFIG``     the same settings as a JSON object in librdkafka's names
                             (confluent-kafka and other librdkafka clients); settings
                             librdkafka has no property for are left out
``REPLAY_MAX_POLL_RECORDS``  records to take per poll, when the incident sets
                             ``max.poll.records`` (librdkafka: ``consume(num_messages=N)``)
``REPLAY_TRANSACTIONAL_ID``  stable per instance, for exactly-once apps
``REPLAY_INSTANCE``          0, 1, ... when several instances run
``REPLAY_TOPIC_<NAME>``      each topic of the incident by its name there (``orders-dlq``
                             gives ``REPLAY_TOPIC_ORDERS_DLQ``)
============================ ============================================================

``REPLAY_CLIENT_PROPERTIES`` is set when the context has a ``properties_dir`` (the harness
gives one); ``REPLAY_MAX_POLL_RECORDS`` only when the incident sets ``max.poll.records``.
``{instance}`` in a client setting's value is the instance's number (``group.instance.id``).
The translation between the two dialects is :mod:`kafka_replay.apps.client_config`.

A command may use ``{bootstrap}``, ``{input_topic}``, ``{output_topic}``, ``{group_id}``,
``{transactional_id}``, ``{instance}``, ``{client_properties}`` and ``{topic.<name>}`` in its
arguments.
``REPLAY_REPORT_FILE`` is set too: where :mod:`kafka_replay.apps.instrument` writes what an
instrumented app reports.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .client_config import batch_size, for_instance, java_properties, librdkafka_config

BOOTSTRAP = "KAFKA_BOOTSTRAP_SERVERS"
INPUT_TOPIC = "REPLAY_INPUT_TOPIC"
OUTPUT_TOPIC = "REPLAY_OUTPUT_TOPIC"
GROUP_ID = "REPLAY_GROUP_ID"
CLIENT_CONFIG = "REPLAY_CLIENT_CONFIG"
CLIENT_PROPERTIES = "REPLAY_CLIENT_PROPERTIES"
MAX_POLL_RECORDS = "REPLAY_MAX_POLL_RECORDS"
SCHEMA_REGISTRY = "REPLAY_SCHEMA_REGISTRY_URL"
DATABASE_URL = "REPLAY_DATABASE_URL"
JDBC_URL = "REPLAY_JDBC_URL"
DATABASE_SCHEMA = "REPLAY_DATABASE_SCHEMA"
#: The placeholder a command line may use for each service the run started beside Kafka.
PLACEHOLDERS = {
    SCHEMA_REGISTRY: "schema_registry",
    DATABASE_URL: "database_url",
    JDBC_URL: "jdbc_url",
    DATABASE_SCHEMA: "database_schema",
}
TRANSACTIONAL_ID = "REPLAY_TRANSACTIONAL_ID"
INSTANCE = "REPLAY_INSTANCE"
REPORT_FILE = "REPLAY_REPORT_FILE"
#: The event (``{"kind": "ready", "pid": ...}`` in the report file) by which an app that joins
#: no consumer group, as a Flink job, says it is working.
READY_EVENT = "ready"
#: The event (``{"kind": "part", "pid": ..., "name": ..., "part_pid": ...}``) by which an app
#: names one of its processes (a Flink session's ``taskmanager-0``) for steps to aim at.
PART_EVENT = "part"
#: ``REPLAY_TOPIC_<NAME>``: a topic by its name in the definition (see :func:`topic_variable`).
TOPIC_PREFIX = "REPLAY_TOPIC_"

_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_PLACEHOLDER = re.compile(
    r"\{(bootstrap|input_topic|output_topic|group_id|transactional_id|instance|python"
    r"|client_properties|schema_registry|database_url|jdbc_url|database_schema"
    r"|topic\.[a-z][a-z0-9_-]*)\}"
)


def is_placeholder(name: str) -> bool:
    """Whether ``{name}`` is one of the contract's placeholders (``{python}`` among them)."""
    return _PLACEHOLDER.fullmatch(f"{{{name}}}") is not None


def topic_variable(name: str) -> str:
    """The variable that carries the topic a definition names ``name``."""
    return TOPIC_PREFIX + re.sub(r"[^A-Z0-9]", "_", name.upper())


@contextlib.contextmanager
def starting_directory_first() -> Iterator[None]:
    """A team's modules import from the directory the run started in, as its app's do
    (``run_callable``), whether the harness runs as ``python -m`` or as its console script."""
    here = os.getcwd()
    sys.path.insert(0, here)
    try:
        yield
    finally:
        sys.path.remove(here)


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:function`` (dots allowed on both sides), with an error that names it."""
    if not _CALLABLE.match(spec):
        raise ValueError(f"{spec!r} is not of the form module:function")
    module_name, _, attribute = spec.partition(":")
    try:
        with starting_directory_first():
            target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"cannot import {module_name!r} for {spec!r}: {exc} (run from the directory that "
            "holds it, or put that directory on PYTHONPATH)"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{module_name!r} has no {attribute!r} (from {spec!r})")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec!r} is not callable")
    return target


@dataclass(frozen=True)
class AppContext:
    """What one instance of the app under test is told.

    The harness builds it with ``client_config`` in Apache Kafka's names (a definition's
    ``[client]``); :meth:`env` hands them over in both dialects. In an app,
    :meth:`from_env` gives ``client_config`` in librdkafka's names, ready for a
    confluent-kafka client, and :attr:`max_poll_records` from ``REPLAY_MAX_POLL_RECORDS``.
    """

    bootstrap_servers: str
    input_topic: str
    output_topic: str
    group_id: str
    client_config: dict[str, Any] = field(default_factory=dict)
    instance: int = 0
    #: Where :meth:`env` writes ``client-<instance>.properties``; None: no properties file.
    properties_dir: Path | None = None
    #: ``REPLAY_MAX_POLL_RECORDS`` as :meth:`from_env` read it (librdkafka has no such key).
    poll_records: int | None = None
    #: the schema registry the values are framed for (Confluent's API), when a run has one
    schema_registry: str | None = None
    #: the run's database, when its incident has a ``[sink]``: a libpq URI, a JDBC URL and
    #: the schema its tables are in
    database_url: str | None = None
    jdbc_url: str | None = None
    database_schema: str | None = None
    #: every topic of the incident, by its name in the definition (``REPLAY_TOPIC_<NAME>``)
    topics: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client_config", for_instance(self.client_config, self.instance))

    @property
    def transactional_id(self) -> str:
        return f"{self.group_id}-tx-{self.instance}"

    @property
    def max_poll_records(self) -> int | None:
        """Records to take per poll when the incident sets ``max.poll.records``, else None."""
        if self.poll_records is not None:
            return self.poll_records
        return batch_size(self.client_config)

    @property
    def client_properties(self) -> Path | None:
        """The Java ``.properties`` file of this instance's client settings (see :meth:`env`)."""
        if self.properties_dir is None:
            return None
        return Path(self.properties_dir) / f"client-{self.instance}.properties"

    def write_client_properties(self) -> Path | None:
        """Write :attr:`client_properties` (unless it already holds the same text)."""
        path = self.client_properties
        if path is None:
            return None
        text = java_properties(self.client_config)
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial")
            partial.write_text(text)
            partial.replace(path)
        return path

    def env(self) -> dict[str, str]:
        env = {
            BOOTSTRAP: self.bootstrap_servers,
            INPUT_TOPIC: self.input_topic,
            OUTPUT_TOPIC: self.output_topic,
            GROUP_ID: self.group_id,
            CLIENT_CONFIG: json.dumps(librdkafka_config(self.client_config)),
            TRANSACTIONAL_ID: self.transactional_id,
            INSTANCE: str(self.instance),
        }
        properties = self.write_client_properties()
        if properties is not None:
            env[CLIENT_PROPERTIES] = str(properties)
        if self.max_poll_records is not None:
            env[MAX_POLL_RECORDS] = str(self.max_poll_records)
        for name, value in self._services().items():
            if value is not None:
                env[name] = value
        env.update({topic_variable(name): topic for name, topic in self.topics.items()})
        return env

    def _services(self) -> dict[str, str | None]:
        """What the run started beside Kafka, by variable."""
        return {
            SCHEMA_REGISTRY: self.schema_registry,
            DATABASE_URL: self.database_url,
            JDBC_URL: self.jdbc_url,
            DATABASE_SCHEMA: self.database_schema,
        }

    def placeholders(self) -> dict[str, str]:
        values = {
            "bootstrap": self.bootstrap_servers,
            "input_topic": self.input_topic,
            "output_topic": self.output_topic,
            "group_id": self.group_id,
            "transactional_id": self.transactional_id,
            "instance": str(self.instance),
        }
        properties = self.write_client_properties()
        if properties is not None:
            values["client_properties"] = str(properties)
        for name, value in self._services().items():
            if value is not None:
                values[PLACEHOLDERS[name]] = value
        values.update({f"topic.{name}": topic for name, topic in self.topics.items()})
        return values

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppContext:
        """The context a process was started with (raises naming any missing variable).

        ``client_config`` is ``REPLAY_CLIENT_CONFIG``: librdkafka's names.
        """
        env = os.environ if environ is None else environ
        missing = [n for n in (BOOTSTRAP, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID) if n not in env]
        if missing:
            raise RuntimeError(f"not started by kafka-replay: {', '.join(missing)} unset")
        poll_records = env.get(MAX_POLL_RECORDS)
        return cls(
            bootstrap_servers=env[BOOTSTRAP],
            input_topic=env[INPUT_TOPIC],
            output_topic=env[OUTPUT_TOPIC],
            group_id=env[GROUP_ID],
            client_config=json.loads(env.get(CLIENT_CONFIG) or "{}"),
            instance=int(env.get(INSTANCE, "0")),
            poll_records=int(poll_records) if poll_records else None,
            schema_registry=env.get(SCHEMA_REGISTRY),
            database_url=env.get(DATABASE_URL),
            jdbc_url=env.get(JDBC_URL),
            database_schema=env.get(DATABASE_SCHEMA),
            topics={
                name.removeprefix(TOPIC_PREFIX).lower(): topic
                for name, topic in env.items()
                if name.startswith(TOPIC_PREFIX)
            },
        )


def values_of_topics(values: Mapping[str, str]) -> list[str]:
    """The ``{topic.<name>}`` placeholders among a context's values."""
    return [f"topic.{name[6:]}" for name in values if name.startswith("topic.")]


@dataclass(frozen=True)
class AppSpec:
    """The app under test: a command line (``argv``), a Python callable (``target``), or a
    container ``image`` with ``argv`` as its arguments (none: the image's own command)."""

    argv: tuple[str, ...] = ()
    target: str | None = None
    image: str | None = None

    @classmethod
    def parse(cls, text: str, image: str | None = None) -> AppSpec:
        """``module:function`` is a callable; anything else is a shell-quoted command line
        (with an ``image``: the container's arguments, which may be empty)."""
        text = text.strip()
        if image is not None:
            return cls(argv=tuple(shlex.split(text)), image=image)
        if _CALLABLE.match(text):
            return cls(target=text)
        argv = tuple(shlex.split(text))
        if not argv:
            raise ValueError("the app command is empty")
        return cls(argv=argv)

    @property
    def name(self) -> str:
        """How reports and errors name the app: its image, its ``module:function``, the module
        of ``python -m``, the class of ``java -cp``, else its program's name."""
        if self.image is not None:
            return self.image
        if self.target is not None:
            return self.target
        argv = list(self.argv)
        if "-m" in argv[:-1]:
            return argv[argv.index("-m") + 1]
        if os.path.basename(argv[0]) == "java" and "-cp" in argv[:-2]:
            return argv[argv.index("-cp") + 2]  # the main class
        return os.path.basename(argv[0])

    def command(self, context: AppContext, python: str) -> list[str]:
        """The argv to run for one instance (an image's arguments), placeholders filled in."""
        if self.target is not None:
            return [python, "-m", "kafka_replay.apps.run_callable", self.target]
        return [fill_placeholders(arg, context, python) for arg in self.argv]


def fill_placeholders(text: str, context: AppContext, python: str | None = None) -> str:
    """``text`` with the contract's placeholders (``{bootstrap}``, ``{topic.NAME}``, ...) filled
    in for ``context``, and ``{python}``, the interpreter apps run with (the harness's own, where
    ``kafka_replay`` imports); one this run has no value for is a ValueError naming it."""
    values = context.placeholders()
    if python is not None:
        values["python"] = python

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            if name.startswith("topic."):
                having = ", ".join(sorted(values_of_topics(values))) or "none"
                raise ValueError(f"{{{name}}}: the incident has no such topic ({having})")
            raise ValueError(f"{{{name}}} is not available to this app: this run has no {name}")
        return values[name]

    return _PLACEHOLDER.sub(fill, text)
