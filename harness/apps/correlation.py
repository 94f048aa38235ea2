"""Which input an output record came from.

By default an output carries the input's ``event_id`` as a header or a JSON field. For apps
whose output is transformed beyond that, the user gives ``module:function(record) ->
event_id`` taking an :class:`OutputRecord`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .contract import load_callable

EVENT_ID = "event_id"

Extractor = Callable[["OutputRecord"], str | None]


@dataclass(frozen=True)
class OutputRecord:
    """An output record as the checker sees it, whatever client or reader produced it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Mapping[str, bytes] = field(default_factory=dict)
    timestamp_ms: int | None = None

    @classmethod
    def from_message(cls, message: object) -> OutputRecord:
        """From a confluent-kafka ``Message``."""
        headers = {name: value or b"" for name, value in (message.headers() or [])}  # type: ignore[attr-defined]
        return cls(
            message.topic(),  # type: ignore[attr-defined]
            message.partition(),  # type: ignore[attr-defined]
            message.offset(),  # type: ignore[attr-defined]
            message.key(),  # type: ignore[attr-defined]
            message.value(),  # type: ignore[attr-defined]
            headers,
            message.timestamp()[1],  # type: ignore[attr-defined]
        )


def default_event_id(record: OutputRecord) -> str | None:
    """The ``event_id`` header, else the ``event_id`` field of a JSON object value."""
    header = record.headers.get(EVENT_ID)
    if header:
        return header.decode()
    if not record.value:
        return None
    try:
        document = json.loads(record.value)
    except (ValueError, UnicodeDecodeError):
        return None
    event_id = document.get(EVENT_ID) if isinstance(document, dict) else None
    return str(event_id) if event_id is not None else None


def load_extractor(spec: str | None) -> Extractor:
    """The user's ``module:function`` if given, else :func:`default_event_id`."""
    return default_event_id if spec is None else load_callable(spec)
