"""Programs the harness builds once from a registry and keeps in its cache (Tansu)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from kafka_replay.file_lock import file_lock

from .server_errors import ServerError


def built_once(
    binary: Path, override_env: str, build: Callable[[Path], None], error: type[ServerError]
) -> Path:
    """``$override_env`` when set (an executable), else ``binary``, built by ``build`` the first
    time; the build holds a lock, so parallel workers build it once."""
    override = os.environ.get(override_env)
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise error(f"{override_env}={override} is not an executable file")
        return path
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(binary.parent / ".lock"):
        if not binary.exists():
            build(binary)
    return binary
