"""Choose how Kafka runs: ``embedded`` JVM processes (default) or ``container``s."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .nodes import NodeCluster

BACKEND_ENV = "KAFKA_REPLAY_BACKEND"
IMAGE_ENV = "KAFKA_REPLAY_IMAGE"
BACKENDS = ("embedded", "container")


def choose_backend(requested: str | None = None) -> str:
    backend = requested or os.environ.get(BACKEND_ENV) or "embedded"
    if backend not in BACKENDS:
        raise ValueError(f"Kafka backend {backend!r} is not one of {', '.join(BACKENDS)}")
    return backend


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
    if choose_backend(backend) == "container":
        from .container import ContainerCluster  # imports testcontainers only when wanted

        image = image or os.environ.get(IMAGE_ENV) or None
        return ContainerCluster(
            version,
            brokers,
            broker_config_overrides,
            work_dir,
            image=image,
            network_faults=network_faults,
        )
    from .embedded import EmbeddedCluster

    return EmbeddedCluster(
        version, brokers, broker_config_overrides, work_dir, network_faults=network_faults
    )
