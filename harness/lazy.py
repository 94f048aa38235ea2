"""Package exports imported on first use, so that a light part of a package (its constants)
never pays for its heavy parts (Spark, Kafka clients, testcontainers)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_package(
    package: str, by_module: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any]]:
    """A package's ``__all__`` and its module ``__getattr__``, serving each name ``by_module``
    lists (a submodule, then the names it exports, separated by blanks) from that submodule:
    ``__all__, __getattr__ = lazy_package(__name__, {".contract": "AppSpec ..."})``."""
    exports = {name: module for module, names in by_module.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    return sorted(exports), __getattr__
