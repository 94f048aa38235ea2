"""Documents made to a team's own schema (Avro ``.avsc`` or JSON Schema), realistic and seeded.

A team's app deserializes its topic with the schema it registered; replaying an incident with
payloads of that shape shows what its own code does with them. Text comes from Faker by what a
field's format or name says (:mod:`.fields`), numbers from the schema's bounds (or, where it
gives none, from what the name suggests: ``amount`` looks like money), and every time from a
seeded clock, never the wall clock: the same seed gives the same documents on any day.

A schema is read once into a small tree of nodes (:class:`PayloadSchema`); a
:class:`DocumentMaker` turns that tree into closures bound to one Faker and one random source,
so a ten-field record costs microseconds. What the tree cannot model exactly (``oneOf``,
``not``, ``if``...) is made and then checked against the schema, retried a few times; a schema
no generated document satisfies fails at :func:`load_schema`, naming the field.
"""

from __future__ import annotations

import bisect
import copy
import io
import json
import random
import re
import string
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from itertools import accumulate
from math import ceil, floor, inf
from pathlib import Path
from re import _constants as sre  # the parse tree of a pattern, to make text that matches it
from re import _parser as sre_parse
from struct import pack, unpack
from typing import Any

import fastavro
import jsonschema
from faker import Faker
from fastavro.validation import ValidationError as AvroValidationError
from fastavro.validation import validate as avro_validate
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for

from .fields import TEMPORAL, faker_for, uuid_text
from .generators import POOL_SIZE


class SchemaError(ValueError):
    """A schema the harness cannot make documents for, with a one-line reason."""


#: How a key is picked: ``uniform``, ``zipf`` (weights 1/rank**ZIPF_S) or ``hot`` (one key
#: takes HOT_SHARE of the records).
SKEWS = ("uniform", "zipf", "hot")
ZIPF_S = 1.1
HOT_SHARE = 0.9
#: An optional JSON Schema property is in a document this often; a nullable value is null this
#: often (mostly present, so an app sees real values, but never always).
OPTIONAL_SHARE, NULL_SHARE = 0.5, 0.1
#: Times start at a seeded instant of 2020-2024 and move on by random gaps under a second.
_EPOCH_FROM, _EPOCH_SPAN = 1_577_836_800, 5 * 365 * 86_400
_DAY_US = 86_400_000_000
#: Tries for a value that must also pass a check (a pattern, ``oneOf``, ``not``...).
_TRIES = 50
#: Documents made and validated at load: a schema no document satisfies fails there.
_SELF_CHECK = 20
#: Past this nesting of a recursive type, unions pick null and optional fields are left out.
_DEEP, _TOO_DEEP = 3, 60
#: JSON Schema words the node tree does not model: values under them are checked and retried.
_CHECKED = frozenset(
    {"not", "if", "dependentRequired", "dependentSchemas", "dependencies", "propertyNames"}
    | {"contains", "maxProperties", "patternProperties"}
)
_LOWER = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"})
_UPPER = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"})
_NOTES = frozenset(
    {"$comment", "description", "title", "examples", "default", "$id", "$schema", "$defs"}
    | {"definitions"}
)
_ID_NAME = re.compile(r"(^|[_-])id$|[a-z]Id$")
#: Numbers by name where the schema gives no bounds: (pattern on the plain name, range, decimals).
_RANGES: tuple[tuple[re.Pattern[str], tuple[int, int], int], ...] = tuple(
    (re.compile(pattern), bounds, decimals)
    for pattern, bounds, decimals in (
        (r"cents$|minor$", (100, 500_000), 0),
        (r"amount|price|total|cost|fee|balance|tax|salary|payment|revenue|discount", (1, 5000), 2),
        (r"quantity|qty|count$|units$", (1, 20), 0),
        (r"age$", (18, 90), 0),
        (r"year$", (1990, 2030), 0),
        (r"latitude|^lat$", (-90, 90), 6),
        (r"longitude|^lon$|^lng$", (-180, 180), 6),
        (r"rating|score|stars", (1, 5), 1),
        (r"percent|pct", (0, 100), 2),
    )
)
_DEFAULT_RANGE = ((0, 10_000), 2)


# -- the node tree: what a schema allows, Avro and JSON Schema alike ----------------------------


@dataclass(eq=False)
class _Str:
    type: str
    name: str
    fmt: str | None = None
    lo: int = 0
    hi: int | None = None
    pattern: str | None = None


@dataclass(eq=False)
class _Int:
    type: str
    name: str
    lo: int | None = None
    hi: int | None = None
    multiple: int | None = None
    logical: str | None = None
    bits: int = 64


@dataclass(eq=False)
class _Num:
    type: str
    name: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    multiple: float | None = None
    float32: bool = False


@dataclass(eq=False)
class _Dec:
    type: str
    name: str
    precision: int
    scale: int
    size: int | None = None  # a fixed's bytes


@dataclass(eq=False)
class _Bytes:
    type: str
    size: int | None = None  # fixed


@dataclass(eq=False)
class _Const:
    type: str  # "enum", "const", "boolean", "null"
    values: tuple[Any, ...]


@dataclass(eq=False)
class _Obj:
    type: str
    fields: dict[str, tuple[Any, bool]]  # name: (node, required)
    min_props: int = 0


@dataclass(eq=False)
class _Arr:
    type: str
    item: Any  # None: no items past the prefix
    lo: int = 1
    hi: int = 3
    prefix: tuple[Any, ...] = ()
    unique: bool = False


@dataclass(eq=False)
class _Map:
    type: str
    value: Any


@dataclass(eq=False)
class _Union:
    type: str
    branches: tuple[Any, ...]


@dataclass(eq=False)
class _Checked:
    """A node whose values are checked against ``schema`` (JSON Schema) and retried."""

    inner: Any
    schema: dict[str, Any]


@dataclass(eq=False)
class _Ref:
    """A recursive type's use inside itself: resolved when a document gets there."""

    key: str
    table: dict[str, Any]


def _is_null(node: Any) -> bool:
    return isinstance(node, _Const) and node.values == (None,)


def _branches(node: Any) -> list[Any]:
    """The concrete nodes a value of ``node`` may be (through unions, checks and refs)."""
    if isinstance(node, _Ref):
        return _branches(node.table[node.key])
    if isinstance(node, _Checked):
        return _branches(node.inner)
    if isinstance(node, _Union):
        return [leaf for branch in node.branches for leaf in _branches(branch)]
    return [node]


def _type_name(node: Any) -> str:
    names = dict.fromkeys(getattr(leaf, "type", "?") for leaf in _branches(node))
    return "|".join(names)


def _plain(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# -- reading a JSON Schema -----------------------------------------------------------------------


def _merge(into: dict[str, Any], part: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``allOf``'s parts as one schema, and whether the merge lost a constraint (then values
    are checked against the original)."""
    out, lossy = dict(into), False
    for key, value in part.items():
        if key not in out or key in _NOTES:
            out.setdefault(key, value)
        elif key == "properties":
            both = out[key]
            out[key] = {
                **both,
                **{p: {"allOf": [both[p], s]} if p in both else s for p, s in value.items()},
            }
        elif key == "required":
            out[key] = list(dict.fromkeys([*out[key], *value]))
        elif key in _LOWER or key in _UPPER:
            pick = max if key in _LOWER else min
            out[key] = pick(out[key], value)
            lossy |= isinstance(value, bool)  # draft 4's exclusiveMinimum: true
        elif key == "type":
            mine = [out[key]] if isinstance(out[key], str) else out[key]
            theirs = [value] if isinstance(value, str) else value
            common = [t for t in mine if t in theirs or (t == "integer" and "number" in theirs)]
            if not common:
                raise SchemaError(f"allOf asks for type {mine} and {theirs} at once")
            out[key] = common
        elif key == "enum":
            out[key] = [v for v in out[key] if v in value]
        elif key == "additionalProperties":
            out[key] = False if value is False else out[key]
        elif out[key] != value:
            lossy = True
    return out, lossy


class _JsonSchemaReader:
    """A JSON Schema document read into nodes; ``$ref`` followed within the file."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.table: dict[str, Any] = {}
        self._base = root.get("$id", "") if isinstance(root.get("$id"), str) else ""

    def resolve(self, ref: str) -> Any:
        local = ref.removeprefix(self._base) if self._base else ref
        if not local.startswith("#") or (len(local) > 1 and not local.startswith("#/")):
            raise SchemaError(f"$ref {ref!r} is not within the file (#/$defs/... is followed)")
        found: Any = self.root
        for token in local[2:].split("/") if len(local) > 1 else ():
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(found, dict) and token in found:
                found = found[token]
            elif isinstance(found, list) and token.isdigit() and int(token) < len(found):
                found = found[int(token)]
            else:
                raise SchemaError(f"$ref {ref!r} points at nothing in the file")
        return found

    def inline(self, schema: Any, stack: frozenset[str]) -> dict[str, Any]:
        """``schema`` with its own ``$ref`` and ``allOf`` replaced by what they name."""
        schema = {} if schema is True else schema
        for _ in range(_TOO_DEEP):
            if not isinstance(schema, dict):
                raise SchemaError(f"a schema is an object, not {schema!r}")
            if "$ref" in schema:
                ref = schema["$ref"]
                if ref in stack:
                    raise SchemaError(f"$ref {ref!r} under allOf refers to itself")
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema, _ = _merge(self.resolve(ref), rest)
            elif "allOf" in schema:
                schema = self.flatten(schema, stack)[0]
            else:
                return schema
        raise SchemaError("$ref and allOf nest too deep")

    def flatten(self, schema: dict[str, Any], stack: frozenset[str]) -> tuple[dict, bool]:
        merged, lossy = {k: v for k, v in schema.items() if k != "allOf"}, False
        for part in schema["allOf"]:
            merged, lost = _merge(merged, self.inline(part, stack))
            lossy |= lost
        return merged, lossy

    def node(self, schema: Any, name: str, stack: frozenset[str] = frozenset()) -> Any:
        where = name or "the document"
        if schema is True:
            schema = {}
        if schema is False:
            raise SchemaError(f"{where} allows no value (its schema is false)")
        if not isinstance(schema, dict):
            raise SchemaError(f"{where}: a schema is an object, not {schema!r}")
        if "$ref" in schema:
            ref = schema["$ref"]
            if any(k not in _NOTES for k in schema if k != "$ref"):
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                return self.node({"allOf": [{"$ref": ref}, rest]}, name, stack)
            if ref in stack:
                return _Ref(ref, self.table)
            built = self.node(self.resolve(ref), name, stack | {ref})
            self.table[ref] = built
            return built
        original, lossy = schema, False
        if "allOf" in schema:
            schema, lossy = self.flatten(schema, stack)
        node = self._shape(schema, name, stack)
        if lossy or _CHECKED & schema.keys():
            return _Checked(node, original)
        return node

    def _shape(self, schema: dict[str, Any], name: str, stack: frozenset[str]) -> Any:
        if "const" in schema:
            return _Const("const", (schema["const"],))
        if "enum" in schema:
            if not schema["enum"]:
                raise SchemaError(f"{name or 'the document'} has an empty enum")
            return _Const("enum", tuple(schema["enum"]))
        for word in ("oneOf", "anyOf"):
            if word in schema:
                base = {k: v for k, v in schema.items() if k != word and k not in _NOTES}
                parts = [self._with(base, part, stack) for part in schema[word]]
                union = _Union(word, tuple(self.node(p, name, stack) for p in parts))
                return _Checked(union, schema) if word == "oneOf" and len(parts) > 1 else union
        kind = schema.get("type")
        if isinstance(kind, list):
            if len(kind) != 1:
                parts = [{**schema, "type": one} for one in kind]
                return _Union("type", tuple(self._shape(p, name, stack) for p in parts))
            kind = kind[0]
        return self._typed(kind or _inferred(schema), schema, name, stack)

    def _with(self, base: dict[str, Any], part: Any, stack: frozenset[str]) -> Any:
        """A ``oneOf`` branch with what its parent says besides (the branch as it is if nothing)."""
        if not base:
            return part
        merged, _ = _merge(base, self.inline(part, stack))
        return merged

    def _typed(self, kind: str, schema: dict[str, Any], name: str, stack: frozenset[str]) -> Any:
        if kind == "object":
            return self._object(schema, stack)
        if kind == "array":
            return self._array(schema, name, stack)
        if kind in ("string", "any"):
            return _Str(
                "string",
                name,
                schema.get("format"),
                schema.get("minLength", 0),
                schema.get("maxLength"),
                schema.get("pattern"),
            )
        if kind in ("integer", "number"):
            return _numeric(kind, name, schema)
        if kind == "boolean":
            return _Const("boolean", (True, False))
        if kind == "null":
            return _Const("null", (None,))
        raise SchemaError(f"{name or 'the document'} has an unknown type {kind!r}")

    def _object(self, schema: dict[str, Any], stack: frozenset[str]) -> _Obj:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        fields = {p: (self.node(s, p, stack), p in required) for p, s in properties.items()}
        for name in (r for r in required if r not in properties):
            by_pattern = [
                s for p, s in schema.get("patternProperties", {}).items() if re.search(p, name)
            ]
            if by_pattern:
                fields[name] = (self.node(by_pattern[0], name, stack), True)
            elif extra is False:
                raise SchemaError(
                    f"{name} is required but not a property (additionalProperties: false)"
                )
            else:
                fields[name] = (
                    self.node(extra if isinstance(extra, dict) else {}, name, stack),
                    True,
                )
        return _Obj("object", fields, schema.get("minProperties", 0))

    def _array(self, schema: dict[str, Any], name: str, stack: frozenset[str]) -> _Arr:
        items, prefix = schema.get("items"), schema.get("prefixItems", [])
        if isinstance(items, list):  # draft 4-2019: positional items, then additionalItems
            prefix, items = items, schema.get("additionalItems", True)
        lo = schema.get("minItems", 0 if schema.get("maxItems") == 0 else 1)
        hi = schema.get("maxItems", max(lo, 3))
        item = (
            None
            if items is False
            else self.node({} if items in (None, True) else items, name, stack)
        )
        if item is None:
            hi = min(hi, len(prefix))
        if lo > hi:
            raise SchemaError(f"{name or 'the document'} needs {lo} items but allows {hi}")
        nodes = tuple(self.node(p, name, stack) for p in prefix)
        return _Arr("array", item, lo, hi, nodes, bool(schema.get("uniqueItems")))


def _inferred(schema: dict[str, Any]) -> str:
    """The type a schema without ``type`` implies by its keywords (``any`` for none)."""
    for kind, words in (
        ("object", {"properties", "required", "additionalProperties", "minProperties"}),
        ("array", {"items", "prefixItems", "minItems", "maxItems"}),
        ("string", {"minLength", "maxLength", "pattern", "format"}),
        ("number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    ):
        if words & schema.keys():
            return kind
    return "any"


def _numeric(kind: str, name: str, schema: dict[str, Any]) -> _Int | _Num:
    """Bounds of a JSON Schema number; draft 4's boolean ``exclusiveMinimum`` included."""
    lo, hi = schema.get("minimum"), schema.get("maximum")
    lo_open = hi_open = False
    ex_lo, ex_hi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(ex_lo, bool):
        lo_open = ex_lo and lo is not None
    elif ex_lo is not None and (lo is None or ex_lo >= lo):
        lo, lo_open = ex_lo, True
    if isinstance(ex_hi, bool):
        hi_open = ex_hi and hi is not None
    elif ex_hi is not None and (hi is None or ex_hi <= hi):
        hi, hi_open = ex_hi, True
    multiple = schema.get("multipleOf")
    if kind == "integer":
        ilo = None if lo is None else (floor(lo) + 1 if lo_open else ceil(lo))
        ihi = None if hi is None else (ceil(hi) - 1 if hi_open else floor(hi))
        if ilo is not None and ihi is not None and ilo > ihi:
            raise SchemaError(f"{name}: no integer between {lo} and {hi}")
        return _Int("integer", name, ilo, ihi, multiple)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_open or hi_open))):
        raise SchemaError(f"{name}: no number between {lo} and {hi}")
    return _Num("number", name, lo, hi, lo_open, hi_open, multiple)


# -- reading an Avro schema ----------------------------------------------------------------------


class _AvroReader:
    """fastavro's parsed schema read into nodes; named types are inlined, recursion is a ref."""

    def __init__(self, parsed: dict[str, Any]) -> None:
        self.named: dict[str, Any] = parsed.get("__named_schemas", {})
        self.table: dict[str, Any] = {}

    def node(self, schema: Any, name: str, stack: frozenset[str] = frozenset()) -> Any:
        if isinstance(schema, list):
            return _Union("union", tuple(self.node(s, name, stack) for s in schema))
        if isinstance(schema, str):
            if schema in self.named:
                if schema in stack:
                    return _Ref(schema, self.table)
                return self.node(self.named[schema], name, stack)
            schema = {"type": schema}
        kind, logical = schema["type"], schema.get("logicalType")
        if isinstance(kind, (list, dict)) or kind in self.named:
            return self.node(kind, name, stack)
        if kind in ("record", "error"):
            inner = stack | {schema["name"]}
            fields = {
                f["name"]: (self.node(f["type"], f["name"], inner), True) for f in schema["fields"]
            }
            self.table[schema["name"]] = built = _Obj("record", fields)
            return built
        if kind == "enum":
            return _Const("enum", tuple(schema["symbols"]))
        if kind == "array":
            return _Arr("array", self.node(schema["items"], name, stack))
        if kind == "map":
            return _Map("map", self.node(schema["values"], name, stack))
        if logical == "decimal" and kind in ("bytes", "fixed"):
            size = schema.get("size")
            return _Dec(kind, name, schema["precision"], schema.get("scale", 0), size)
        if kind in ("bytes", "fixed"):
            return _Bytes(kind, schema.get("size"))
        if kind in ("int", "long"):
            return _Int(kind, name, logical=logical, bits=32 if kind == "int" else 64)
        if kind in ("float", "double"):
            return _Num(kind, name, float32=kind == "float")
        if kind == "string":
            return _Str("string", name, logical)
        if kind == "boolean":
            return _Const("boolean", (True, False))
        if kind == "null":
            return _Const("null", (None,))
        raise SchemaError(f"{name}: Avro type {kind!r} is not supported")


# -- text that matches a pattern -----------------------------------------------------------------

_Emit = Callable[[random.Random, list[str]], None]
_CATEGORY_CHARS = {
    sre.CATEGORY_DIGIT: string.digits,
    sre.CATEGORY_NOT_DIGIT: string.ascii_letters,
    sre.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    sre.CATEGORY_NOT_WORD: " -.,",
    sre.CATEGORY_SPACE: " ",
    sre.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
}
_ANY_CHARS = string.ascii_letters + string.digits


def _class_chars(items: list[tuple[Any, Any]]) -> str:
    """The characters a ``[...]`` class allows (ASCII where it is negated or wide)."""
    chars: set[str] = set()
    negate = False
    for op, value in items:
        if op == sre.NEGATE:
            negate = True
        elif op == sre.LITERAL:
            chars.add(chr(value))
        elif op == sre.RANGE:
            chars.update(chr(c) for c in range(value[0], min(value[1], value[0] + 255) + 1))
        elif op == sre.CATEGORY:
            chars.update(_CATEGORY_CHARS.get(value, ""))
    if negate:
        chars = set(string.ascii_letters + string.digits + " -_.") - chars
    return "".join(sorted(chars))


def _emitter(items: Iterable[tuple[Any, Any]]) -> _Emit:
    parts = [_emit_one(op, value) for op, value in items]

    def emit(rng: random.Random, out: list[str]) -> None:
        for part in parts:
            part(rng, out)

    return emit


def _choose(chars: str) -> _Emit:
    if not chars:
        raise SchemaError("a character class that allows nothing")
    return lambda rng, out: out.append(rng.choice(chars))


def _emit_one(op: Any, value: Any) -> _Emit:
    if op == sre.LITERAL:
        return lambda _rng, out: out.append(chr(value))
    if op == sre.NOT_LITERAL:
        return _choose(_ANY_CHARS.replace(chr(value), ""))
    if op == sre.ANY:
        return _choose(_ANY_CHARS)
    if op == sre.IN:
        return _choose(_class_chars(value))
    if op == sre.CATEGORY:
        return _choose(_CATEGORY_CHARS.get(value, _ANY_CHARS))
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        lo, hi, sub = value
        inner, hi = _emitter(sub), min(hi, lo + 5)

        def repeat(rng: random.Random, out: list[str]) -> None:
            for _ in range(rng.randint(lo, hi)):
                inner(rng, out)

        return repeat
    if op == sre.SUBPATTERN:
        return _emitter(value[-1])
    if op == sre.ATOMIC_GROUP:
        return _emitter(value)
    if op == sre.BRANCH:
        alternatives = [_emitter(alternative) for alternative in value[1]]
        return lambda rng, out: rng.choice(alternatives)(rng, out)
    if op == sre.AT:
        return lambda _rng, _out: None
    raise SchemaError(f"its pattern uses {str(op).lower()}, which no generated text can follow")


def _pattern_maker(pattern: str) -> Callable[[random.Random], str]:
    """Text made from ``pattern``'s parse: literals, classes, repeats, groups, alternatives
    (lookarounds and back-references are refused). Callers still check the result."""
    try:
        emit = _emitter(sre_parse.parse(pattern))
    except re.error as exc:
        raise SchemaError(f"pattern {pattern!r} is not a regular expression: {exc}") from None

    def make(rng: random.Random) -> str:
        out: list[str] = []
        emit(rng, out)
        return "".join(out)

    return make


# -- the schema ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldInfo:
    """A field a dotted path names: what it holds, so the harness knows what can be written."""

    path: str
    type: str  # as the schema says: "string", "int", "null|string", "enum", "record", ...
    text: bool  # holds free text: a string, not an enum or a const
    nullable: bool
    required: bool  # in every document (an optional property is in about half)
    format: str | None = None  # JSON Schema format or Avro logical type
    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None


def _parts(path: str) -> list[str]:
    return [p for p in path.strip().removeprefix("$").removeprefix(".").split(".") if p]


@dataclass(frozen=True, eq=False)
class PayloadSchema:
    """A team's schema, read: its kind, its text as registered, and what its documents hold."""

    kind: str  # "avro" or "json-schema"
    text: str  # the file's JSON, as a schema registry is given it
    raw: Any  # the schema as JSON (for Avro, as fastavro parsed it)
    root: Any = field(repr=False)
    _validator: Any = field(default=None, repr=False, compare=False)

    def field(self, path: str) -> FieldInfo | None:
        """The field ``customer.email`` (or ``$.customer.email``) names, None if none."""
        return self._find(path)[0]

    def _find(self, path: str) -> tuple[FieldInfo | None, str]:
        """The field, or why there is none."""
        node, parts, required = self.root, _parts(path), True
        if not parts:
            return None, "an empty field path"
        for depth, part in enumerate(parts):
            leaves = _branches(node)
            objects = [b for b in leaves if isinstance(b, _Obj) and part in b.fields]
            if not objects:
                where = ".".join(parts[:depth])
                if depth and not any(isinstance(b, _Obj) for b in leaves):
                    return None, f"{where} is {_type_name(node)}, it has no fields"
                return None, f"no field {'.'.join(parts)} in the schema; fields: {self._listed()}"
            optional_parent = depth and (len(objects) < len(leaves))
            node, needed = objects[0].fields[part]
            required = required and needed and not optional_parent
        leaves = _branches(node)
        text = next((leaf for leaf in leaves if isinstance(leaf, _Str)), None)
        info = FieldInfo(
            ".".join(parts),
            _type_name(node),
            text is not None,
            any(_is_null(leaf) for leaf in leaves),
            required,
            text.fmt if text else None,
            text.lo if text else 0,
            text.hi if text else None,
            text.pattern if text else None,
        )
        return info, ""

    def fields(self) -> list[str]:
        """Every field's dotted path (not into arrays or maps, nor into a recursive type)."""
        found: list[str] = []

        def walk(node: Any, prefix: str, seen: frozenset[int]) -> None:
            for leaf in _branches(node):
                if isinstance(leaf, _Obj) and id(leaf) not in seen:
                    for name, (child, _) in leaf.fields.items():
                        if prefix + name not in found:
                            found.append(prefix + name)
                        walk(child, f"{prefix}{name}.", seen | {id(leaf)})

        walk(self.root, "", frozenset())
        return found

    def _listed(self, most: int = 30) -> str:
        names = self.fields()
        return ", ".join(names[:most]) + (", ..." if len(names) > most else "")

    def text_field_problem(self, path: str, sample: str | None = None) -> str | None:
        """Why ``path`` cannot hold text the harness writes (an event id, a key), else None;
        with ``sample``, also why that very text would not fit (a length, a pattern)."""
        info, problem = self._find(path)
        if info is None:
            return problem
        if not info.text:
            what = "an enum" if info.type == "enum" else info.type
            return f"{info.path} is {what}, not a string"
        if sample is None:
            return None
        longest = inf if info.max_length is None else info.max_length
        if not info.min_length <= len(sample) <= longest:
            size = f"{info.min_length}..{info.max_length}"
            return f"{info.path} holds {size} characters; {sample!r} has {len(sample)}"
        if info.pattern and not re.search(info.pattern, sample):
            return f"{info.path} must match {info.pattern!r}; {sample!r} does not"
        if info.format and not jsonschema.FormatChecker().conforms(sample, info.format):
            return f"{info.path} holds a {info.format}; {sample!r} is not one"
        return None

    def documents(self, seed: int, present: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
        """An endless stream of documents, the same for the same seed."""
        fake = Faker()
        fake.seed_instance(seed)
        make = DocumentMaker(self, fake, random.Random(seed), present)
        while True:
            yield make()

    def validate(self, document: Any) -> None:
        """Raise SchemaError saying where ``document`` breaks the schema."""
        if self.kind == "avro":
            try:
                avro_validate(document, self.raw, raise_errors=True)
            except AvroValidationError as exc:
                raise SchemaError(f"not valid: {exc}") from None
            return
        error = best_match(self._validator.iter_errors(document))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "the document"
            raise SchemaError(f"{where}: {error.message}")

    def check(self, schema: dict[str, Any]) -> Callable[[Any], bool]:
        """Whether a value satisfies ``schema``, a part of this JSON Schema (its refs work)."""
        return self._validator.evolve(schema=schema).is_valid

    def encode_avro(self, document: Any) -> bytes:
        """The document in Avro's binary encoding, without a registry's header."""
        if self.kind != "avro":
            raise SchemaError("Avro encoding needs an Avro schema")
        out = io.BytesIO()
        fastavro.schemaless_writer(out, self.raw, document)
        return out.getvalue()

    @staticmethod
    def encode_json(document: Any) -> bytes:
        """Compact JSON; an Avro document's decimals as their text, bytes as Latin-1 text (as
        Avro's own JSON encoding writes bytes)."""
        return json.dumps(document, separators=(",", ":"), default=_json_default).encode()


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("latin-1")
    raise TypeError(f"{type(value).__name__} is not JSON")


def load_schema(path: Path) -> PayloadSchema:
    """A team's Avro or JSON Schema file, read and tried: a schema no generated document
    satisfies fails here, not in the middle of a run."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SchemaError(f"cannot read it: {exc.strerror or exc}") from None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise SchemaError(f"not JSON: {exc}") from None
    is_record = isinstance(raw, dict) and raw.get("type") in ("record", "error")
    if Path(path).suffix == ".avsc" or is_record:
        schema = _avro(raw, text.strip())
    else:
        schema = _json_schema(raw, text.strip())
    _self_check(schema)
    return schema


def _avro(raw: Any, text: str) -> PayloadSchema:
    if not isinstance(raw, dict) or raw.get("type") not in ("record", "error"):
        raise SchemaError("the top level of an Avro schema for a payload must be a record")
    try:
        parsed = fastavro.parse_schema(raw)
        root = _AvroReader(parsed).node(parsed, "")
    except fastavro.schema.UnknownType as exc:  # a ValueError: named before that one
        raise SchemaError(f"not a valid Avro schema: unknown type {exc.name!r}") from None
    except KeyError as exc:  # fastavro's word for a missing "symbols", "size"...
        raise SchemaError(f"not a valid Avro schema: a type lacks {exc}") from None
    except (fastavro.schema.SchemaParseException, ValueError, TypeError) as exc:
        raise SchemaError(f"not a valid Avro schema: {exc}") from None
    return PayloadSchema("avro", text, parsed, root)


def _json_schema(raw: Any, text: str) -> PayloadSchema:
    if not isinstance(raw, dict):
        raise SchemaError(f"a JSON Schema is an object, not {type(raw).__name__}")
    cls = validator_for(raw)
    try:
        cls.check_schema(raw)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise SchemaError(f"not a valid JSON Schema: {exc.message} (at /{where})") from None
    root = _JsonSchemaReader(raw).node(raw, "")
    leaves = _branches(root)
    if not all(isinstance(leaf, _Obj) for leaf in leaves):
        raise SchemaError(f"the top level is {_type_name(root)}, not an object")
    validator = cls(raw, format_checker=cls.FORMAT_CHECKER)
    return PayloadSchema("json-schema", text, raw, root, validator)


def _self_check(schema: PayloadSchema) -> None:
    fake = Faker()
    fake.seed_instance(0)
    make = DocumentMaker(schema, fake, random.Random(0))
    for _ in range(_SELF_CHECK):
        try:
            schema.validate(make())
        except SchemaError as exc:
            raise SchemaError(f"cannot make documents that conform: {exc}") from None


# -- documents -----------------------------------------------------------------------------------


class _Clock:
    """Event times: a seeded instant of 2020-2024, moving on by random gaps under a second."""

    def __init__(self, rng: random.Random) -> None:
        self._random, self._randrange = rng.random, rng.randrange
        self.us = (_EPOCH_FROM + rng.randrange(_EPOCH_SPAN)) * 1_000_000
        self._second, self._text = -1, ""

    def tick(self) -> int:
        self.us += int(self._random() * 1_000_000)
        return self.us

    def date_time(self) -> str:
        second, micro = divmod(self.tick(), 1_000_000)
        if second != self._second:
            self._second = second
            self._text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._text}.{micro // 1000:03d}Z"

    def date(self, birthday: bool = False) -> str:
        days = self.tick() // _DAY_US - (self._randrange(18 * 365, 80 * 365) if birthday else 0)
        return (date(1970, 1, 1) + timedelta(days=days)).isoformat()

    def time(self) -> str:
        return time.strftime("%H:%M:%SZ", time.gmtime(self.tick() // 1_000_000))


def _span(name: str, lo: float | None, hi: float | None) -> tuple[float, float, int]:
    """Where to draw a number from: the schema's bounds, filled in by what the name suggests."""
    plain = _plain(name)
    (dlo, dhi), decimals = next(
        ((bounds, places) for pattern, bounds, places in _RANGES if pattern.search(plain)),
        _DEFAULT_RANGE,
    )
    width = dhi - dlo
    if lo is None:
        lo = dlo if hi is None or dlo < hi else hi - width
    if hi is None:
        hi = dhi if dhi > lo else lo + width
    return lo, hi, decimals


def _fits_multiple(value: float, multiple: float) -> bool:
    """jsonschema's own test of ``multipleOf`` for a float."""
    if isinstance(multiple, float):
        quotient = value / multiple
        return int(quotient) == quotient
    return value % multiple == 0


class DocumentMaker:
    """Documents to one schema, drawn from one seeded Faker and one seeded random source.

    ``present`` names fields (dotted paths) that are in every document, optional or nullable
    or not: where the harness writes an event id, the field and its parents must exist.
    """

    def __init__(
        self,
        schema: PayloadSchema,
        fake: Faker,
        rng: random.Random,
        present: Iterable[str] = (),
    ) -> None:
        self.schema, self._fake, self._rng = schema, fake, rng
        self._clock = _Clock(rng)
        self._words = list(fake.get_words_list())
        self._present = {".".join(_parts(p)[:n]) for p in present for n in range(1, 99)}
        self._depth = 0
        self._make = self._compile(schema.root, "")

    def __call__(self) -> dict[str, Any]:
        return self._make()

    def _compile(self, node: Any, path: str) -> Callable[[], Any]:
        compile_kind = {
            _Str: self._text,
            _Int: self._int,
            _Num: self._number,
            _Dec: self._decimal,
            _Bytes: self._bytes,
            _Const: self._const,
            _Obj: self._object,
            _Arr: self._array,
            _Map: self._map,
            _Union: self._union,
            _Checked: self._checked,
            _Ref: self._ref,
        }[type(node)]
        return compile_kind(node, path)

    # text

    def _text(self, node: _Str, path: str) -> Callable[[], str]:
        make = self._text_source(node)
        lo, hi, pattern = node.lo, node.hi, node.pattern
        if not (lo or hi is not None or pattern):
            return make
        longest = inf if hi is None else hi
        if lo > longest:
            raise SchemaError(f"{path}: at least {lo} characters but at most {hi}")
        matches = re.compile(pattern).search if pattern else None
        try:
            from_pattern = _pattern_maker(pattern) if pattern else None
        except SchemaError as exc:
            raise SchemaError(f"{path}: {exc}") from None
        rng, words = self._rng, self._words

        def fitted() -> str:
            value = make()
            if len(value) > longest:
                value = value[:hi].rstrip() or value[:hi]
            while len(value) < lo:
                value = f"{value} {rng.choice(words)}".lstrip()[:hi]
            if matches is None or matches(value):
                return value
            for _ in range(_TRIES):
                value = from_pattern(rng)  # type: ignore[misc]
                if lo <= len(value) <= longest and matches(value):
                    return value
            raise SchemaError(f"{path}: no text of {lo}..{hi} characters matching {pattern!r}")

        return fitted

    def _text_source(self, node: _Str) -> Callable[[], str]:
        """Where a string comes from: the seeded clock, a fresh UUID, Faker, or plain words."""
        make = faker_for(node.name, node.fmt)
        fmt = node.fmt if node.fmt in ("date-time", "date", "time") else TEMPORAL.get(make)  # type: ignore[arg-type]
        clock = self._clock
        if fmt == "date-time":
            return clock.date_time
        if fmt == "time":
            return clock.time
        if fmt == "date":
            birthday = bool(re.search(r"dob|birth", _plain(node.name)))
            return lambda: clock.date(birthday)
        if make is uuid_text or (make is None and _ID_NAME.search(node.name)):
            bits = self._rng.getrandbits
            return lambda: str(uuid.UUID(int=bits(128), version=4))
        if make is None:  # an unknown format is an annotation: words pass the schema
            rng, words = self._rng, self._words
            return lambda: " ".join(rng.choices(words, k=rng.randint(1, 3)))
        return self._pooled(make)

    def _pooled(self, make: Callable[[Faker], str]) -> Callable[[], str]:
        """Faker's values, the first POOL_SIZE made fresh and then drawn again (Faker's e-mails
        cost ~80us each, a draw from the pool well under 1us)."""
        pool: list[str] = []
        fake, choice = self._fake, self._rng.choice

        def pooled() -> str:
            if len(pool) < POOL_SIZE:
                pool.append(make(fake))
                return pool[-1]
            return choice(pool)

        return pooled

    # numbers

    def _temporal_number(self, name: str, bits: int) -> Callable[[], int] | None:
        """A number a time-like name (``created_at``) implies: epoch milliseconds (seconds in an
        Avro ``int``, days for a date), None for other names (``lat`` is a latitude)."""
        if any(pattern.search(_plain(name)) for pattern, _, _ in _RANGES):
            return None
        kind = TEMPORAL.get(faker_for(name))  # type: ignore[arg-type]
        tick = self._clock.tick
        if kind == "date":
            return lambda: tick() // _DAY_US
        if kind:
            unit = 1_000_000 if bits == 32 else 1000
            return lambda: tick() // unit
        return None

    def _int(self, node: _Int, path: str) -> Callable[[], int]:
        tick = self._clock.tick
        logical = {
            "timestamp-millis": lambda: tick() // 1000,
            "local-timestamp-millis": lambda: tick() // 1000,
            "timestamp-micros": tick,
            "local-timestamp-micros": tick,
            "date": lambda: tick() // _DAY_US,
            "time-millis": lambda: tick() // 1000 % 86_400_000,
            "time-micros": lambda: tick() % _DAY_US,
        }.get(node.logical or "")
        if logical:
            return logical
        if node.lo is None and node.hi is None and not node.multiple:
            temporal = self._temporal_number(node.name, node.bits)
            if temporal:
                return temporal
        lo, hi, _ = _span(node.name, node.lo, node.hi)
        step = node.multiple or 1
        k_lo, k_hi = ceil(lo / step), floor(hi / step)
        if k_lo > k_hi:
            raise SchemaError(f"{path}: no multiple of {step} between {lo} and {hi}")
        randint = self._rng.randint
        if step == 1:
            return lambda: randint(k_lo, k_hi)
        return lambda: randint(k_lo, k_hi) * step

    def _number(self, node: _Num, path: str) -> Callable[[], float]:
        if node.lo is None and node.hi is None and not node.multiple:
            temporal = self._temporal_number(node.name, 64)
            if temporal:
                return lambda: temporal() / 1000
        lo, hi, decimals = _span(node.name, node.lo, node.hi)
        while decimals < 12 and 10 ** (1 - decimals) > hi - lo:  # a narrow range: finer steps
            decimals += 1
        rng, lo_open, hi_open, multiple = self._rng, node.lo_open, node.hi_open, node.multiple
        float32 = node.float32
        if multiple:
            places = max(decimals, -Decimal(str(multiple)).as_tuple().exponent)  # type: ignore[operator]
            k_lo, k_hi = ceil(lo / multiple), floor(hi / multiple)
            if k_lo > k_hi:
                raise SchemaError(f"{path}: no multiple of {multiple} between {lo} and {hi}")

        def number() -> float:
            for _ in range(_TRIES):
                if multiple:
                    value = round(rng.randint(k_lo, k_hi) * multiple, places)
                else:
                    value = round(rng.uniform(lo, hi), decimals)
                if float32:  # Avro's float: a value that reads back as it was written
                    value = unpack("<f", pack("<f", value))[0]
                if (
                    (lo < value or (value == lo and not lo_open))
                    and (value < hi or (value == hi and not hi_open))
                    and (not multiple or _fits_multiple(value, multiple))
                ):
                    return value
            raise SchemaError(f"{path}: no number between {lo} and {hi} in {_TRIES} tries")

        return number

    def _decimal(self, node: _Dec, path: str) -> Callable[[], Decimal]:
        lo, hi, _ = _span(node.name, None, None)
        most = 10**node.precision - 1
        if node.size:  # a fixed holds a signed integer of its bytes
            most = min(most, 2 ** (8 * node.size - 1) - 1)
        unit = 10**node.scale
        k_lo, k_hi = min(int(lo * unit), most), min(int(hi * unit), most)
        randint, scale = self._rng.randint, -node.scale
        return lambda: Decimal(randint(k_lo, k_hi)).scaleb(scale)

    def _bytes(self, node: _Bytes, path: str) -> Callable[[], bytes]:
        rng, size = self._rng, node.size
        if size is not None:
            return lambda: rng.randbytes(size)
        return lambda: rng.randbytes(rng.randint(8, 32))

    # choices and structure

    def _const(self, node: _Const, path: str) -> Callable[[], Any]:
        values = node.values
        if values == (True, False):
            random_ = self._rng.random
            return lambda: random_() < 0.5
        if any(isinstance(v, (dict, list)) for v in values):
            choice = self._rng.choice
            return lambda: copy.deepcopy(choice(values))
        if len(values) == 1:
            return lambda: values[0]
        choice = self._rng.choice
        return lambda: choice(values)

    def _object(self, node: _Obj, path: str) -> Callable[[], dict[str, Any]]:
        prefix = f"{path}." if path else ""
        parts = [
            (name, self._compile(child, prefix + name), required or prefix + name in self._present)
            for name, (child, required) in node.fields.items()
        ]
        random_, least = self._rng.random, node.min_props

        def make() -> dict[str, Any]:
            document: dict[str, Any] = {}
            shallow = self._depth < _DEEP
            for name, value, always in parts:
                if always or (shallow and random_() < OPTIONAL_SHARE):
                    document[name] = value()
            if len(document) < least:
                for name, value, _ in parts:
                    if len(document) < least and name not in document:
                        document[name] = value()
            return document

        return make

    def _array(self, node: _Arr, path: str) -> Callable[[], list[Any]]:
        item = self._compile(node.item, f"{path}[]") if node.item is not None else None
        prefix = [self._compile(p, f"{path}[]") for p in node.prefix]
        lo, hi, unique, randint = node.lo, node.hi, node.unique, self._rng.randint

        def make() -> list[Any]:
            count = randint(lo, hi) if self._depth < _DEEP else lo
            values: list[Any] = []
            seen: set[str] = set()
            for _ in range(count * _TRIES if unique else count):
                if len(values) == count:
                    break
                position = len(values)
                value = prefix[position]() if position < len(prefix) else item()  # type: ignore[misc]
                if unique:
                    marker = json.dumps(value, sort_keys=True, default=repr)
                    if marker in seen:
                        continue
                    seen.add(marker)
                values.append(value)
            if len(values) < lo:
                raise SchemaError(f"{path}: no {lo} distinct items in {count * _TRIES} tries")
            return values

        return make

    def _map(self, node: _Map, path: str) -> Callable[[], dict[str, Any]]:
        value, rng, words = self._compile(node.value, f"{path}{{}}"), self._rng, self._words
        return lambda: {rng.choice(words): value() for _ in range(rng.randint(1, 3))}

    def _union(self, node: _Union, path: str) -> Callable[[], Any]:
        branches = [self._compile(b, path) for b in node.branches if not _is_null(b)]
        nullable = len(branches) < len(node.branches) and path not in self._present
        if not branches:
            return lambda: None
        random_, choice = self._rng.random, self._rng.choice
        only = branches[0] if len(branches) == 1 else None
        if not nullable:
            return only or (lambda: choice(branches)())

        def make() -> Any:
            if self._depth >= _DEEP or random_() < NULL_SHARE:
                return None
            return only() if only else choice(branches)()

        return make

    def _checked(self, node: _Checked, path: str) -> Callable[[], Any]:
        inner, valid = self._compile(node.inner, path), self.schema.check(node.schema)

        def make() -> Any:
            for _ in range(_TRIES):
                value = inner()
                if valid(value):
                    return value
            raise SchemaError(f"{path or 'the document'}: no value that conforms in {_TRIES} tries")

        return make

    def _ref(self, node: _Ref, path: str) -> Callable[[], Any]:
        made: list[Callable[[], Any]] = []

        def make() -> Any:
            if not made:  # compiled on first use: a recursive type compiles one level at a time
                made.append(self._compile(node.table[node.key], path))
            self._depth += 1
            try:
                if self._depth > _TOO_DEEP:
                    raise SchemaError(f"{node.key} contains itself with no way to stop")
                return made[0]()
            finally:
                self._depth -= 1

        return make


# -- keys ----------------------------------------------------------------------------------------


class KeySpace:
    """``size`` distinct keys, made once, and a skew to pick them by.

    ``uniform``: every key alike. ``zipf``: the key of rank r weighs 1/r**1.1 (ZIPF_S), so a few
    keys carry most records, as a popular customer's orders do. ``hot``: one key takes 90%
    (HOT_SHARE) of the records and the rest share the remainder evenly, the partition a
    celebrity's key lands on. ``make(n)`` makes the n-th candidate key; a make that repeats
    itself (a currency code has ~160 values) gets a ``-n`` suffix past its distinct values.
    """

    def __init__(
        self, size: int, skew: str = "uniform", make: Callable[[int], str] | None = None
    ) -> None:
        if size < 1:
            raise ValueError(f"a key space needs at least 1 key, not {size}")
        if skew not in SKEWS:
            raise ValueError(f"skew must be one of {', '.join(SKEWS)}, not {skew!r}")
        self.skew = skew
        self.keys = _distinct(make or (lambda n: f"key-{n}"), size)
        if skew == "zipf":
            weights = [1 / rank**ZIPF_S for rank in range(1, size + 1)]
        elif skew == "hot" and size > 1:
            weights = [HOT_SHARE] + [(1 - HOT_SHARE) / (size - 1)] * (size - 1)
        else:
            weights = []
        self._cumulative = list(accumulate(weights))

    def pick(self, rng: random.Random) -> str:
        """One key, drawn with ``rng``."""
        if not self._cumulative:
            return rng.choice(self.keys)
        at = bisect.bisect(self._cumulative, rng.random() * self._cumulative[-1])
        return self.keys[min(at, len(self.keys) - 1)]


def _distinct(make: Callable[[int], str], size: int) -> list[str]:
    keys: dict[str, None] = {}
    n = 0
    while len(keys) < size and n < 3 * size + 100:
        keys.setdefault(str(make(n)), None)
        n += 1
    while len(keys) < size:
        keys.setdefault(f"{make(n)}-{n}", None)
        n += 1
    return list(keys)
