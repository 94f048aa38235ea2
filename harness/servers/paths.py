"""Where the harness keeps things that outlive one run: artifacts and the live-process registry."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "KAFKA_REPLAY_CACHE"
REGISTRY_ENV = "KAFKA_REPLAY_REGISTRY"


def cache_root() -> Path:
    """The user's cache directory for kafka-replay (``$KAFKA_REPLAY_CACHE`` overrides it)."""
    override = os.environ.get(CACHE_ENV)
    root = Path(override) if override else Path(platformdirs.user_cache_dir("kafka-replay"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def registry_dir() -> Path:
    """Where leases of running servers are kept (``$KAFKA_REPLAY_REGISTRY`` overrides it)."""
    override = os.environ.get(REGISTRY_ENV)
    path = Path(override) if override else cache_root() / "live"
    path.mkdir(parents=True, exist_ok=True)
    return path
