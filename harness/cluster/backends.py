"""The backends, by name: how brokers run (``embedded`` JVMs, ``container``s, ``tansu``, ...).

Backends are registered like steps and symptoms: each is one cluster class that declares its
name (``backend``), one line about it (``about``), how its release is chosen (``runs_kafka``,
``choose_version``), what it cannot do (``lacks``, see :mod:`.capabilities`) and how it starts.
:func:`register_backend` adds one; the built-in ones are registered when the backends are first
listed, and a team's own when its module is imported as a plugin (the ``kafka_replay.plugins``
entry point group, see :mod:`kafka_replay.plugins`). Every ``--kafka-backend`` and setup string
(``tansu:0.6.0``) is read here, by :func:`choose_backend`, and its help text comes from here.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kafka_replay.plugins import load_plugins

from .capabilities import CAPABILITIES
from .versions import choose_version

if TYPE_CHECKING:
    from .nodes import NodeCluster

BACKEND_ENV = "KAFKA_REPLAY_BACKEND"
IMAGE_ENV = "KAFKA_REPLAY_IMAGE"
DEFAULT_BACKEND = "embedded"
#: The modules of the built-in backends, each registering its class when imported.
BUILT_IN = (
    "kafka_replay.cluster.embedded",
    "kafka_replay.cluster.container",
    "kafka_replay.cluster.tansu",
)
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

_REGISTRY: dict[str, type[NodeCluster]] = {}
_loaded = False
C = TypeVar("C", bound="type[NodeCluster]")


class BackendError(ValueError):
    """A backend that cannot be registered or loaded as declared."""


def register_backend(cls: C) -> C:
    """Class decorator: make ``cls`` the backend named by its ``backend`` attribute."""
    name = cls.backend or ""
    where = f"{cls.__module__}.{cls.__qualname__}"
    if not _NAME.match(name):
        raise BackendError(f"backend class {where}: backend = {name!r} is not a lowercase name")
    if not cls.about:
        raise BackendError(f"backend {name} ({where}) says nothing about itself: set about")
    unknown = set(cls.lacks) - set(CAPABILITIES)
    if unknown:
        raise BackendError(
            f"backend {name} ({where}) lacks unknown capabilities {sorted(unknown)}; "
            f"known: {', '.join(CAPABILITIES)}"
        )
    known = _REGISTRY.get(name)
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise BackendError(f"backend {name} is registered twice: {known.__module__} and {where}")
    _REGISTRY[name] = cls
    return cls


def backends() -> dict[str, type[NodeCluster]]:
    """Every registered backend by name: the built-in ones first, then entry points'."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILT_IN:
            importlib.import_module(module)
        load_plugins()  # a team's own backends register themselves as their modules load
    return dict(_REGISTRY)


def backend_names() -> tuple[str, ...]:
    return tuple(backends())


def kafka_backends() -> tuple[str, ...]:
    """The backends that run Apache Kafka itself (at the release ``--kafka-version`` picks)."""
    return tuple(name for name, cls in backends().items() if cls.runs_kafka)


def choose_backend(requested: str | None = None) -> str:
    """The backend asked for, else ``$KAFKA_REPLAY_BACKEND``, else ``embedded``.

    A backend that runs its own releases may name one, ``tansu:0.6.0``; it is given back with
    the release chosen.
    """
    backend = (requested or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND).strip()
    name, _, version = backend.partition(":")
    cls = backends().get(name)
    if cls is None or (version and cls.runs_kafka):
        raise ValueError(f"Kafka backend {backend!r} is not one of {_choices()}")
    if not cls.runs_kafka:
        return f"{name}:{cls.choose_version(version or None)}"
    return name


def _choices() -> str:
    return ", ".join(
        name if cls.runs_kafka else f"{name}[:VERSION]" for name, cls in backends().items()
    )


def backends_help() -> str:
    """``--kafka-backend``'s help: every backend with its line, from the registry."""
    listed = "; ".join(
        f"{name if cls.runs_kafka else name + '[:VERSION]'}: {cls.about}"
        for name, cls in backends().items()
    )
    return f"how brokers run ({listed}); default: ${BACKEND_ENV}, else {DEFAULT_BACKEND}"


def backend_argument(text: str) -> str:
    """``--kafka-backend``'s type: the backend, or argparse's error saying what is allowed."""
    try:
        return choose_backend(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def backend_name(backend: str) -> str:
    """``tansu`` for ``tansu:0.6.0``: the backend without its release."""
    return backend.partition(":")[0]


def backend_version(backend: str, kafka_version: str | None) -> str:
    """The release a cluster of ``backend`` runs: its own, or the Kafka release chosen."""
    name, _, version = choose_backend(backend).partition(":")
    return choose_version(kafka_version) if backends()[name].runs_kafka else version


def backend_class(backend: str) -> type[NodeCluster]:
    """The cluster class of a backend."""
    return backends()[backend_name(choose_backend(backend))]


def make_cluster(
    backend: str,
    version: str | None = None,
    brokers: int = 1,
    broker_config: Mapping[str, object] | None = None,
    work_dir: Path | None = None,
    image: str | None = None,
    network_faults: bool = False,
    features: Mapping[str, int] | None = None,
) -> NodeCluster:
    """An unstarted cluster of the chosen backend (with a proxy per node for network faults,
    its storage formatted with ``features``' levels)."""
    cls = backend_class(backend)
    return cls.create(
        backend_version(backend, version),
        brokers,
        broker_config,
        work_dir,
        image=image or os.environ.get(IMAGE_ENV) or None,
        network_faults=network_faults,
        features=features,
    )
