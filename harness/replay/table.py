"""One TOML table of a definition, read field by field: every mistake names the file and
field, and a field nobody asked for is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .model import DefinitionError


class Table:
    """Reads one TOML table, field by field, and refuses the fields it was not asked for."""

    def __init__(self, source: Path, where: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise DefinitionError(source, where or "(top level)", "must be a table")
        self.source, self.where, self.data = source, where, data
        self.read: set[str] = set()

    def path(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

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
        return Table(self.source, self.path(name), self.get(name, dict, default))

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
