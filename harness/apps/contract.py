"""The application contract: how the app under test learns where Kafka is and what to do.

An app is a command line or a Python ``module:function``; either runs as its own process and
receives these environment variables (the names are a stable interface):

=========================== ============================================================
``KAFKA_BOOTSTRAP_SERVERS`` where the brokers are
``REPLAY_INPUT_TOPIC``      topic to consume
``REPLAY_OUTPUT_TOPIC``     topic to produce results to
``REPLAY_GROUP_ID``         consumer group
``REPLAY_CLIENT_CONFIG``    JSON object of client properties the incident imposes
``REPLAY_TRANSACTIONAL_ID`` stable per instance, for exactly-once apps
``REPLAY_INSTANCE``         0, 1, ... when several instances run
=========================== ============================================================

A command may use ``{bootstrap}``, ``{input_topic}``, ``{output_topic}``, ``{group_id}``,
``{transactional_id}`` and ``{instance}`` in its arguments. ``REPLAY_REPORT_FILE`` is set
too: where :mod:`harness.apps.instrument` writes what an instrumented app reports.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

BOOTSTRAP = "KAFKA_BOOTSTRAP_SERVERS"
INPUT_TOPIC = "REPLAY_INPUT_TOPIC"
OUTPUT_TOPIC = "REPLAY_OUTPUT_TOPIC"
GROUP_ID = "REPLAY_GROUP_ID"
CLIENT_CONFIG = "REPLAY_CLIENT_CONFIG"
TRANSACTIONAL_ID = "REPLAY_TRANSACTIONAL_ID"
INSTANCE = "REPLAY_INSTANCE"
REPORT_FILE = "REPLAY_REPORT_FILE"

_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_PLACEHOLDER = re.compile(
    r"\{(bootstrap|input_topic|output_topic|group_id|transactional_id|instance)\}"
)


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:function`` (dots allowed on both sides), with an error that names it."""
    if not _CALLABLE.match(spec):
        raise ValueError(f"{spec!r} is not of the form module:function")
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} for {spec!r}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{module_name!r} has no {attribute!r} (from {spec!r})")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec!r} is not callable")
    return target


@dataclass(frozen=True)
class AppContext:
    """What one instance of the app under test is told."""

    bootstrap_servers: str
    input_topic: str
    output_topic: str
    group_id: str
    client_config: dict[str, Any] = field(default_factory=dict)
    instance: int = 0

    @property
    def transactional_id(self) -> str:
        return f"{self.group_id}-tx-{self.instance}"

    def env(self) -> dict[str, str]:
        return {
            BOOTSTRAP: self.bootstrap_servers,
            INPUT_TOPIC: self.input_topic,
            OUTPUT_TOPIC: self.output_topic,
            GROUP_ID: self.group_id,
            CLIENT_CONFIG: json.dumps(self.client_config),
            TRANSACTIONAL_ID: self.transactional_id,
            INSTANCE: str(self.instance),
        }

    def placeholders(self) -> dict[str, str]:
        return {
            "bootstrap": self.bootstrap_servers,
            "input_topic": self.input_topic,
            "output_topic": self.output_topic,
            "group_id": self.group_id,
            "transactional_id": self.transactional_id,
            "instance": str(self.instance),
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppContext:
        """The context a process was started with (raises naming any missing variable)."""
        env = os.environ if environ is None else environ
        missing = [n for n in (BOOTSTRAP, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID) if n not in env]
        if missing:
            raise RuntimeError(f"not started by kafka-replay: {', '.join(missing)} unset")
        return cls(
            bootstrap_servers=env[BOOTSTRAP],
            input_topic=env[INPUT_TOPIC],
            output_topic=env[OUTPUT_TOPIC],
            group_id=env[GROUP_ID],
            client_config=json.loads(env.get(CLIENT_CONFIG) or "{}"),
            instance=int(env.get(INSTANCE, "0")),
        )


@dataclass(frozen=True)
class AppSpec:
    """The app under test: a command line (``argv``) or a Python callable (``target``)."""

    argv: tuple[str, ...] = ()
    target: str | None = None

    @classmethod
    def parse(cls, text: str) -> AppSpec:
        """``module:function`` is a callable; anything else is a shell-quoted command line."""
        text = text.strip()
        if _CALLABLE.match(text):
            return cls(target=text)
        argv = tuple(shlex.split(text))
        if not argv:
            raise ValueError("the app command is empty")
        return cls(argv=argv)

    @property
    def name(self) -> str:
        return self.target or os.path.basename(self.argv[0])

    def command(self, context: AppContext, python: str) -> list[str]:
        """The argv to run for one instance, placeholders filled in."""
        if self.target is not None:
            return [python, "-m", "harness.apps.run_callable", self.target]
        values = context.placeholders()
        return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in self.argv]
