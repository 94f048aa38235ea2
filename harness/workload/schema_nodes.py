"""The node tree a team's schema is read into, Avro and JSON Schema alike, and its error.

Both readers (:mod:`.json_schema_reader`, :mod:`.avro_reader`) build these nodes; the
:class:`~.document_maker.DocumentMaker` compiles them into closures and
:class:`~.schema_payloads.PayloadSchema` walks them to answer what a field holds. They live
apart from all three so that none of them imports another to know what a node is; those
modules import this one as ``nodes`` (``nodes.Text``, ``nodes.Object``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class SchemaError(ValueError):
    """A schema the harness cannot make documents for, with a one-line reason."""


#: Past this nesting of a recursive type (or of ``$ref`` and ``allOf``), reading or making
#: stops with an error.
TOO_DEEP = 60


@dataclass(eq=False)
class Text:
    """A string: its format (or Avro logical type), length bounds and pattern."""

    type: str
    name: str
    fmt: str | None = None
    lo: int = 0
    hi: int | None = None
    pattern: str | None = None


@dataclass(eq=False)
class Int:
    """An integer: its bounds and step, an Avro logical type, 32 or 64 bits."""

    type: str
    name: str
    lo: int | None = None
    hi: int | None = None
    multiple: int | None = None
    logical: str | None = None
    bits: int = 64


@dataclass(eq=False)
class Number:
    """A number with a fraction: its bounds (open or closed) and step; ``float32``: Avro's float."""

    type: str
    name: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    multiple: float | None = None
    float32: bool = False


@dataclass(eq=False)
class Decimal:
    """An Avro decimal, in bytes or a fixed of ``size`` bytes."""

    type: str
    name: str
    precision: int
    scale: int
    size: int | None = None  # a fixed's bytes


@dataclass(eq=False)
class Bytes:
    """Avro bytes, or a fixed of ``size`` bytes."""

    type: str
    size: int | None = None  # fixed


@dataclass(eq=False)
class Const:
    """A value picked from a fixed few: an enum, a const, a boolean, null."""

    type: str  # "enum", "const", "boolean", "null"
    values: tuple[Any, ...]


@dataclass(eq=False)
class Object:
    """A JSON object or an Avro record: its fields and whether each is required."""

    type: str
    fields: dict[str, tuple[Any, bool]]  # name: (node, required)
    min_props: int = 0


@dataclass(eq=False)
class Array:
    """An array: its items (after a positional prefix), how many, whether unique."""

    type: str
    item: Any  # None: no items past the prefix
    lo: int = 1
    hi: int = 3
    prefix: tuple[Any, ...] = ()
    unique: bool = False


@dataclass(eq=False)
class Map:
    """An Avro map: words for keys, values of one node."""

    type: str
    value: Any


@dataclass(eq=False)
class Union:
    """One of several nodes (``oneOf``, ``anyOf``, a list of types, an Avro union)."""

    type: str
    branches: tuple[Any, ...]


@dataclass(eq=False)
class Checked:
    """A node whose values are checked against ``schema`` (JSON Schema) and retried."""

    inner: Any
    schema: dict[str, Any]


@dataclass(eq=False)
class Ref:
    """A recursive type's use inside itself: resolved when a document gets there."""

    key: str
    table: dict[str, Any]


def is_null(node: Any) -> bool:
    """Whether ``node`` allows only null."""
    return isinstance(node, Const) and node.values == (None,)


def concrete_nodes(node: Any) -> list[Any]:
    """The concrete nodes a value of ``node`` may be (through unions, checks and refs)."""
    if isinstance(node, Ref):
        return concrete_nodes(node.table[node.key])
    if isinstance(node, Checked):
        return concrete_nodes(node.inner)
    if isinstance(node, Union):
        return [leaf for branch in node.branches for leaf in concrete_nodes(branch)]
    return [node]


def type_name(node: Any) -> str:
    """The types ``node`` allows, as the schema names them: ``null|string``."""
    names = dict.fromkeys(getattr(leaf, "type", "?") for leaf in concrete_nodes(node))
    return "|".join(names)


def plain_name(name: str) -> str:
    """A field's name lower-cased, letters and digits only: ``createdAt`` is ``createdat``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def path_parts(path: str) -> list[str]:
    """A dotted field path's names: ``$.customer.email`` is ``customer``, ``email``."""
    return [p for p in path.strip().removeprefix("$").removeprefix(".").split(".") if p]
