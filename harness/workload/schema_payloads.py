"""A team's own schema (Avro ``.avsc`` or JSON Schema), read and tried: :func:`load_schema`.

A team's app deserializes its topic with the schema it registered; replaying an incident with
payloads of that shape shows what its own code does with them. A schema is read once into a
small tree of nodes (:mod:`.schema_nodes`, by :mod:`.json_schema_reader` or
:mod:`.avro_reader`); :class:`PayloadSchema` answers what a field holds, validates and encodes
documents, and makes them through a :class:`~.document_maker.DocumentMaker`. What the tree
cannot model exactly (``oneOf``, ``not``, ``if``...) is made and then checked against the
schema, retried a few times; a schema no generated document satisfies fails at
:func:`load_schema`, naming the field.
"""

from __future__ import annotations

import io
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from math import inf
from pathlib import Path
from typing import Any

import fastavro
import jsonschema
from faker import Faker
from fastavro.validation import ValidationError as AvroValidationError
from fastavro.validation import validate as avro_validate
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for

from . import schema_nodes as nodes
from .avro_reader import AvroReader
from .document_maker import DocumentMaker
from .json_schema_reader import JsonSchemaReader
from .schema_nodes import SchemaError, concrete_nodes, is_null, path_parts, type_name

#: Documents made and validated at load: a schema no document satisfies fails there.
_SELF_CHECK = 20


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
        node, parts, required = self.root, path_parts(path), True
        if not parts:
            return None, "an empty field path"
        for depth, part in enumerate(parts):
            leaves = concrete_nodes(node)
            objects = [b for b in leaves if isinstance(b, nodes.Object) and part in b.fields]
            if not objects:
                where = ".".join(parts[:depth])
                if depth and not any(isinstance(b, nodes.Object) for b in leaves):
                    return None, f"{where} is {type_name(node)}, it has no fields"
                return None, f"no field {'.'.join(parts)} in the schema; fields: {self._listed()}"
            optional_parent = depth and (len(objects) < len(leaves))
            node, needed = objects[0].fields[part]
            required = required and needed and not optional_parent
        leaves = concrete_nodes(node)
        text = next((leaf for leaf in leaves if isinstance(leaf, nodes.Text)), None)
        info = FieldInfo(
            ".".join(parts),
            type_name(node),
            text is not None,
            any(is_null(leaf) for leaf in leaves),
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
            for leaf in concrete_nodes(node):
                if isinstance(leaf, nodes.Object) and id(leaf) not in seen:
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
        root = AvroReader(parsed).node(parsed, "")
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
    root = JsonSchemaReader(raw).node(raw, "")
    leaves = concrete_nodes(root)
    if not all(isinstance(leaf, nodes.Object) for leaf in leaves):
        raise SchemaError(f"the top level is {type_name(root)}, not an object")
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
