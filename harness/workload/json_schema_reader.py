"""A JSON Schema document read into the node tree (:mod:`.schema_nodes`).

``$ref`` is followed within the file, ``allOf`` merged into one schema, ``oneOf``/``anyOf`` and
a list of types become unions. What the tree cannot model exactly (``not``, ``if``, a merge that
lost a constraint...) is wrapped in a :class:`~.schema_nodes.Checked`, so the document
maker checks its values against the original schema and retries.
"""

from __future__ import annotations

import re
from math import ceil, floor
from typing import Any

from . import schema_nodes as nodes
from .schema_nodes import TOO_DEEP, SchemaError

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


class JsonSchemaReader:
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
        for _ in range(TOO_DEEP):
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
                return nodes.Ref(ref, self.table)
            built = self.node(self.resolve(ref), name, stack | {ref})
            self.table[ref] = built
            return built
        original, lossy = schema, False
        if "allOf" in schema:
            schema, lossy = self.flatten(schema, stack)
        node = self._shape(schema, name, stack)
        if lossy or _CHECKED & schema.keys():
            return nodes.Checked(node, original)
        return node

    def _shape(self, schema: dict[str, Any], name: str, stack: frozenset[str]) -> Any:
        if "const" in schema:
            return nodes.Const("const", (schema["const"],))
        if "enum" in schema:
            if not schema["enum"]:
                raise SchemaError(f"{name or 'the document'} has an empty enum")
            return nodes.Const("enum", tuple(schema["enum"]))
        for word in ("oneOf", "anyOf"):
            if word in schema:
                base = {k: v for k, v in schema.items() if k != word and k not in _NOTES}
                parts = [self._with(base, part, stack) for part in schema[word]]
                union = nodes.Union(word, tuple(self.node(p, name, stack) for p in parts))
                return nodes.Checked(union, schema) if word == "oneOf" and len(parts) > 1 else union
        kind = schema.get("type")
        if isinstance(kind, list):
            if len(kind) != 1:
                parts = [{**schema, "type": one} for one in kind]
                return nodes.Union("type", tuple(self._shape(p, name, stack) for p in parts))
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
            return nodes.Text(
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
            return nodes.Const("boolean", (True, False))
        if kind == "null":
            return nodes.Const("null", (None,))
        raise SchemaError(f"{name or 'the document'} has an unknown type {kind!r}")

    def _object(self, schema: dict[str, Any], stack: frozenset[str]) -> nodes.Object:
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
        return nodes.Object("object", fields, schema.get("minProperties", 0))

    def _array(self, schema: dict[str, Any], name: str, stack: frozenset[str]) -> nodes.Array:
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
        prefix_nodes = tuple(self.node(p, name, stack) for p in prefix)
        return nodes.Array("array", item, lo, hi, prefix_nodes, bool(schema.get("uniqueItems")))


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


def _numeric(kind: str, name: str, schema: dict[str, Any]) -> nodes.Int | nodes.Number:
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
        return nodes.Int("integer", name, ilo, ihi, multiple)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_open or hi_open))):
        raise SchemaError(f"{name}: no number between {lo} and {hi}")
    return nodes.Number("number", name, lo, hi, lo_open, hi_open, multiple)
