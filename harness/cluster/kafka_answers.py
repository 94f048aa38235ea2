"""An error answer to a Kafka request, built without asking a broker.

A fault that answers a request with an error (``NOT_COORDINATOR`` to an OffsetCommit,
``NOT_ENOUGH_REPLICAS`` to a Produce) needs the answer the broker would send: the request's
API and version, its topics and partitions echoed back, each with the error. The request is
decoded and the answer encoded with the protocol's generated types (``kio``); the answer
mirrors the request: an array of the answer whose elements are keyed like one of the request's
(``name``, ``partition_index``, ...) gets one element per element of it, every error code is
the error, and every other field its "nothing" value (-1 for an id, an offset or a port, an
empty string or array, null where the protocol allows it).

:data:`ERROR_APIS` are those whose mirrored answers real clients were seen to take
(``tests/test_request_proxy.py``); others are refused rather than guessed.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import typing
import uuid
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_from_request
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

#: APIs an error answer can be built for (see the module's docstring).
ERROR_APIS = (
    "Produce",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "Heartbeat",
    "JoinGroup",
    "SyncGroup",
    "InitProducerId",
    "AddPartitionsToTxn",
    "EndTxn",
)
#: Fields that say which topic, partition or key an element of an array is about.
_KEYS = ("name", "topic_id", "partition_index", "index", "key", "group_id", "transactional_id")


class AnswerError(ValueError):
    """An answer that cannot be built: an unknown error name, or a request kio cannot read."""


def error_code(name: str) -> int:
    """The code of an error named as Kafka's docs write it (``NOT_COORDINATOR``)."""
    try:
        return int(ErrorCode[name.lower()])
    except KeyError:
        raise AnswerError(
            f"{name!r} is not an error of the Kafka protocol; e.g. NOT_COORDINATOR, "
            "COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, "
            "REQUEST_TIMED_OUT"
        ) from None


def error_answer(request: bytes, error: int) -> bytes:
    """The answer (without its size) to ``request`` (without its size) carrying ``error``."""
    api_key, api_version = int.from_bytes(request[:2], "big"), int.from_bytes(request[2:4], "big")
    try:
        request_type = load_request_schema(api_key, api_version)
        header, offset = entity_reader(request_type.__header_schema__)(request, 0)
        body, _ = entity_reader(request_type)(request, offset)
        answer_type = load_response_from_request(request_type)
        answer = mirror(answer_type, body, ErrorCode(error))
        out = io.BytesIO()
        header_type = answer_type.__header_schema__
        entity_writer(header_type)(out, header_type(correlation_id=header.correlation_id))
        entity_writer(answer_type)(out, answer)
    except AnswerError:
        raise
    except Exception as exc:  # kio raises what its types meet: name the request instead
        raise AnswerError(f"API {api_key} v{api_version}: no error answer: {exc}") from exc
    return out.getvalue()


def mirror(kind: type, source: Any, error: ErrorCode) -> Any:
    """An instance of ``kind`` echoing ``source``'s keys and arrays, each error ``error``."""
    values = {}
    hints = _hints(kind)
    for field in dataclasses.fields(kind):
        hint = hints[field.name]
        element = _entity_element(hint)
        if element is not None:
            values[field.name] = tuple(
                mirror(element, item, error) for item in _matching(source, element)
            )
        elif field.metadata.get("kafka_type") == "error_code":
            values[field.name] = error
        elif field.name in _KEYS and _has(source, field.name):
            values[field.name] = getattr(source, field.name)
        elif field.name == "key" and isinstance(source, str):  # FindCoordinator's keys
            values[field.name] = source
        elif dataclasses.is_dataclass(hint):  # one nested entity (a leader hint): nothing known
            values[field.name] = mirror(hint, None, error)
        else:
            values[field.name] = _nothing(hint, field.metadata.get("kafka_type", ""))
    return kind(**values)


def _matching(source: Any, element: type) -> tuple[Any, ...]:
    """The array of ``source`` whose elements are about what ``element``'s are."""
    keys = {f.name for f in dataclasses.fields(element)} & set(_KEYS)
    for field in dataclasses.fields(source) if dataclasses.is_dataclass(source) else ():
        items = getattr(source, field.name)
        if not isinstance(items, tuple) or not items:
            continue
        first = items[0]
        if dataclasses.is_dataclass(first) and keys & {f.name for f in dataclasses.fields(first)}:
            return items
        if isinstance(first, str) and "key" in keys:  # an array of plain keys
            return items
    return ()


def _nothing(hint: Any, kafka_type: str) -> Any:
    """A field's value in an error answer: null where allowed, else -1, zero time or empty."""
    args = typing.get_args(hint)
    if type(None) in args:
        return None
    if typing.get_origin(hint) is tuple:
        return ()
    base = hint if isinstance(hint, type) else None
    if base is not None and issubclass(base, datetime.timedelta):
        return base(datetime.timedelta(0))
    if base is bool or kafka_type == "bool":
        return False
    if base is not None and issubclass(base, str):
        return base("")
    if base is not None and issubclass(base, bytes):
        return b""
    if base is not None and issubclass(base, uuid.UUID):
        return uuid.UUID(int=0)
    if base is not None and issubclass(base, int):
        return base(-1)
    raise AnswerError(f"no value for a field of type {hint!r} in an error answer")


def _has(source: Any, name: str) -> bool:
    return dataclasses.is_dataclass(source) and name in {f.name for f in dataclasses.fields(source)}


def _entity_element(hint: Any) -> type | None:
    """The element type of an array of entities (``tuple[Topic, ...]``), else None."""
    if typing.get_origin(hint) is not tuple:
        return None
    element = typing.get_args(hint)[0]
    return element if dataclasses.is_dataclass(element) else None


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)
