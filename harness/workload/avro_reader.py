"""An Avro schema, as fastavro parsed it, read into the node tree (:mod:`.schema_nodes`).

Named types are inlined where they are used; a record used inside itself becomes a
:class:`~.schema_nodes.Ref`, resolved one level at a time when a document gets there.
"""

from __future__ import annotations

from typing import Any

from . import schema_nodes as nodes
from .schema_nodes import SchemaError


class AvroReader:
    """fastavro's parsed schema read into nodes; named types are inlined, recursion is a ref."""

    def __init__(self, parsed: dict[str, Any]) -> None:
        self.named: dict[str, Any] = parsed.get("__named_schemas", {})
        self.table: dict[str, Any] = {}

    def node(self, schema: Any, name: str, stack: frozenset[str] = frozenset()) -> Any:
        if isinstance(schema, list):
            return nodes.Union("union", tuple(self.node(s, name, stack) for s in schema))
        if isinstance(schema, str):
            if schema in self.named:
                if schema in stack:
                    return nodes.Ref(schema, self.table)
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
            self.table[schema["name"]] = built = nodes.Object("record", fields)
            return built
        if kind == "enum":
            return nodes.Const("enum", tuple(schema["symbols"]))
        if kind == "array":
            return nodes.Array("array", self.node(schema["items"], name, stack))
        if kind == "map":
            return nodes.Map("map", self.node(schema["values"], name, stack))
        if logical == "decimal" and kind in ("bytes", "fixed"):
            size = schema.get("size")
            return nodes.Decimal(kind, name, schema["precision"], schema.get("scale", 0), size)
        if kind in ("bytes", "fixed"):
            return nodes.Bytes(kind, schema.get("size"))
        if kind in ("int", "long"):
            return nodes.Int(kind, name, logical=logical, bits=32 if kind == "int" else 64)
        if kind in ("float", "double"):
            return nodes.Number(kind, name, float32=kind == "float")
        if kind == "string":
            return nodes.Text("string", name, logical)
        if kind == "boolean":
            return nodes.Const("boolean", (True, False))
        if kind == "null":
            return nodes.Const("null", (None,))
        raise SchemaError(f"{name}: Avro type {kind!r} is not supported")
