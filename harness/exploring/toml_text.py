"""Values written into the definitions an exploration draws."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def toml_value(value: Any) -> str:
    """A TOML value: JSON writes strings, numbers, booleans and arrays the way TOML reads them."""
    if isinstance(value, Mapping):
        return (
            "{ " + ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
        )
    return json.dumps(value)
