"""Choose how Kafka runs: ``embedded`` JVM processes (default), ``container``s, or ``tansu``.

``tansu`` is another vendor's Kafka-compatible broker (see :mod:`.tansu`): the same incidents
on it say what a move to that broker would change.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .versions import choose_tansu_version, choose_version

if TYPE_CHECKING:
    from .nodes import NodeCluster

BACKEND_ENV = "KAFKA_REPLAY_BACKEND"
IMAGE_ENV = "KAFKA_REPLAY_IMAGE"
#: The backends that run Apache Kafka itself.
KAFKA_BACKENDS = ("embedded", "container")
BACKENDS = (*KAFKA_BACKENDS, "tansu")


def choose_backend(requested: str | None = None) -> str:
    """The backend asked for, else ``$KAFKA_REPLAY_BACKEND``, else ``embedded``.

    ``tansu`` may name its release, ``tansu:0.6.0``; it is given back with the release chosen.
    """
    backend = (requested or os.environ.get(BACKEND_ENV) or "embedded").strip()
    name, _, version = backend.partition(":")
    if name not in BACKENDS or (version and name != "tansu"):
        raise ValueError(
            f"Kafka backend {backend!r} is not one of {', '.join(BACKENDS)} (tansu:VERSION "
            "names a Tansu release)"
        )
    if name == "tansu":
        return f"tansu:{choose_tansu_version(version or None)}"
    return backend


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
    """The release a cluster of ``backend`` runs: Tansu's own, or the Kafka release chosen."""
    name, _, version = choose_backend(backend).partition(":")
    return version if name == "tansu" else choose_version(kafka_version)


def backend_class(backend: str) -> type[NodeCluster]:
    """The cluster class of a backend, imported only when that backend is wanted."""
    backend = backend_name(choose_backend(backend))
    if backend == "container":
        from .container import ContainerCluster  # imports testcontainers only when wanted

        return ContainerCluster
    if backend == "tansu":
        from .tansu import TansuCluster

        return TansuCluster
    from .embedded import EmbeddedCluster

    return EmbeddedCluster


def make_cluster(
    backend: str,
    version: str | None = None,
    brokers: int = 1,
    broker_config_overrides: Mapping[str, object] | None = None,
    work_dir: Path | None = None,
    image: str | None = None,
    network_faults: bool = False,
) -> NodeCluster:
    """An unstarted cluster of the chosen backend (with a proxy per node for network faults)."""
    cls = backend_class(backend)
    version = backend_version(backend, version)
    if cls.backend == "container":
        image = image or os.environ.get(IMAGE_ENV) or None
        return cls(  # type: ignore[call-arg]
            version,
            brokers,
            broker_config_overrides,
            work_dir,
            image=image,
            network_faults=network_faults,
        )
    return cls(version, brokers, broker_config_overrides, work_dir, network_faults=network_faults)
