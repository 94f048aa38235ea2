"""A document as Kafka Connect's ``JsonConverter`` reads it with ``schemas.enable=true``:
``{"schema": ..., "payload": ...}``, the schema inferred from the document's own values.

Connectors that write rows (a JDBC sink among them) need a schema for every record; a team
without a schema registry gives it so, in each message. A field that is null gets an optional
string; a list takes its first element's type.
"""

from __future__ import annotations

import json
from typing import Any


def connect_schema(value: Any, field: str | None = None) -> dict[str, Any]:
    """The Connect schema of ``value`` (``field``: its name in the struct holding it)."""
    named = {"field": field} if field is not None else {}
    if value is None:
        return {"type": "string", "optional": True, **named}
    if isinstance(value, bool):
        kind: dict[str, Any] = {"type": "boolean"}
    elif isinstance(value, int):
        kind = {"type": "int64"}
    elif isinstance(value, float):
        kind = {"type": "double"}
    elif isinstance(value, str):
        kind = {"type": "string"}
    elif isinstance(value, dict):
        kind = {"type": "struct", "fields": [connect_schema(v, str(k)) for k, v in value.items()]}
    elif isinstance(value, list):
        kind = {"type": "array", "items": connect_schema(value[0] if value else None)}
    else:
        raise TypeError(f"{type(value).__name__} has no Connect schema (field {field})")
    return {**kind, "optional": False, **named}


def encode_connect_json(document: Any) -> bytes:
    """``document`` in Connect's JSON envelope, its schema beside it."""
    envelope = {"schema": connect_schema(document), "payload": document}
    return json.dumps(envelope, separators=(",", ":")).encode()
