"""One TOML table of a definition, read field by field: every mistake names the file and
field, and a field nobody asked for is refused. A table merged from two (a profile's over the
top level's) names each field where it was written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import DefinitionError


@dataclass(frozen=True)
class Origin:
    """Where each key of a table merged from two was written, so that a mistake is named at the
    line to fix and not at the merge the reader made: a profile's tables over the top level's
    (``[profiles.vulnerable.workloads.backlog]`` over ``[workloads.backlog]``), or a team app's
    step fields over the step's (``[your_app.steps.KIND]`` over ``[[steps]]``).

    A key ``override`` holds was written under ``override_at``, any other under ``base_at``.
    ``deep``: tables both hold were merged key by key (a profile's), else the override's value
    replaced the base's whole. A table both wrote is named where the base wrote it.
    """

    base: Mapping[str, Any] = field(default_factory=dict)
    override: Mapping[str, Any] = field(default_factory=dict)
    override_at: str = ""
    base_at: str = ""
    deep: bool = True

    def overridden(self, keys: Sequence[str]) -> bool:
        """Whether the value at ``keys`` (from the merged table's top) came from the override."""
        base: Any = self.base
        override: Any = self.override
        for key in keys:
            if not isinstance(override, Mapping) or key not in override:
                return False
            merged = self.deep and isinstance(override[key], Mapping)
            if not (merged and isinstance(base, Mapping) and isinstance(base.get(key), Mapping)):
                return True  # the override's value stands alone
            base, override = base[key], override[key]
        return False

    def place(self, keys: Sequence[str], shown: Sequence[str] | None = None) -> str:
        """The dotted path of ``keys`` where they were written (``shown``: the path shown
        instead, e.g. the table of a key that decides where the table is)."""
        prefix = self.override_at if self.overridden(keys) else self.base_at
        return ".".join(part for part in (prefix, *(keys if shown is None else shown)) if part)


#: An unmerged table's keys, written where they are read.
AS_WRITTEN = Origin()


class Table:
    """Reads one TOML table, field by field, and refuses the fields it was not asked for.

    ``origin`` and ``keys`` place a merged table's fields where they were written (``keys``:
    this table's own path from the merged table's top).
    """

    def __init__(
        self,
        source: Path,
        where: str,
        data: Any,
        origin: Origin | None = None,
        keys: tuple[str, ...] = (),
    ) -> None:
        if not isinstance(data, dict):
            raise DefinitionError(source, where or "(top level)", "must be a table")
        self.source, self.where, self.data = source, where, data
        self.origin, self.keys = origin, keys
        self.read: set[str] = set()

    def path(self, *names: str) -> str:
        """The path of the field ``names`` (nested) lead to, where it was written."""
        if self.origin is not None:
            return self.origin.place((*self.keys, *names))
        return ".".join(part for part in (self.where, *names) if part)

    def holder(self, name: str, key: str) -> str:
        """The path of the table ``name`` that holds ``key``: a merged table is named at the
        part its ``key`` was written in."""
        if self.origin is None:
            return self.path(name)
        return self.origin.place((*self.keys, name, key), shown=(*self.keys, name))

    def without(self, *names: str) -> Table:
        """This table without the fields ``names`` (read apart from the rest)."""
        data = {key: value for key, value in self.data.items() if key not in names}
        return Table(self.source, self.where, data, self.origin, self.keys)

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        self.read.add(name)
        if name not in self.data:
            if default is ...:
                raise DefinitionError(self.source, self.path(name), "is required")
            return default
        value = self.data[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
            raise DefinitionError(
                self.source,
                self.path(name),
                f"must be {_describe(kind)}, got {type(value).__name__} {value!r}",
            )
        return value

    def table(self, name: str, default: Any = ...) -> Table:
        data = self.get(name, dict, default)
        return Table(self.source, self.path(name), data, self.origin, (*self.keys, name))

    def fail(self, name: str, problem: str) -> DefinitionError:
        """The error for field ``name`` (the table itself when empty)."""
        return DefinitionError(self.source, self.path(name) if name else self.where, problem)

    def number(self, name: str, default: Any, least: float, above: bool = False) -> Any:
        """A number of at least ``least`` (more than it, when ``above``), or ``default``."""
        value = self.get(name, (int, float), default)
        if value is not None and (value <= least if above else value < least):
            raise self.fail(
                name, f"must be {'more than' if above else 'at least'} {least}, got {value}"
            )
        return value

    def file(self, name: str) -> Path | None:
        """A file the field names, relative to the definition's directory; None if absent."""
        text = self.get(name, str, None)
        if text is None:
            return None
        path = Path(text).expanduser()
        path = path if path.is_absolute() else self.source.parent / path
        if not path.is_file():
            raise self.fail(name, f"no such file: {path}")
        return path

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.read)
        if unknown:
            raise DefinitionError(
                self.source,
                self.path(unknown[0]),
                f"unknown field; allowed here: {', '.join(sorted(self.read))}",
            )


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _describe(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    names |= {list: "a list", dict: "a table"}
    return " or ".join(names.get(k, k.__name__) for k in _kinds(kind))
