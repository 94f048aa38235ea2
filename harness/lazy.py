"""Package exports imported on first use, so that a light part of a package (its constants)
never pays for its heavy parts (Spark, Kafka clients, testcontainers)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``name`` from the submodule ``exports[name]``."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    return __getattr__
