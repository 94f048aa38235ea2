"""A team's own messages: what its generator yields, and how they become record values.

The harness never rewrites a team's payload to carry identity: ``event_id`` travels in a
header. Where an app's output drops headers, the definition names a text field of the
payload (``id_field``) that the harness fills with the record's ``event_id``, and the checker
looks for that field in the output. ``key_field`` makes a document agree with its Kafka key.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from faker import Faker

from .records import EVENT_ID_HEADER, Stamper, Step, Workload, WorkloadRecord

HeaderValue = str | bytes
FORMATS = ("json", "avro", "connect-json")
#: What ``Payload(expect=...)`` takes: None is once on the output.
EXPECT_MARKS = (None, "dead_letter", "filtered")


@dataclass(frozen=True)
class Payload:
    """One message of a team's own, as its generator yields it.

    ``value`` is a document (a dict, encoded as the workload's ``format`` says), or bytes or
    text sent as they are. Without a ``key`` the document's ``key_field`` gives one, else the
    record has none.
    """

    value: Any
    key: str | None = None
    headers: Mapping[str, HeaderValue] | Sequence[tuple[str, HeaderValue]] = ()
    partition: int | None = None
    #: when to send it, in seconds from the start (recorded traffic)
    at_s: float | None = None
    #: where a correct service puts it when not once on the output: ``"dead_letter"`` (a
    #: poison pill) or ``"filtered"`` (dropped by design); see ``[expect]``
    expect: str | None = None

    def __post_init__(self) -> None:
        if self.expect not in EXPECT_MARKS:
            marks = ", ".join(repr(mark) for mark in EXPECT_MARKS)
            raise ValueError(f"Payload expect={self.expect!r}: must be one of {marks}")

    def header_pairs(self) -> tuple[tuple[str, bytes], ...]:
        pairs = self.headers.items() if isinstance(self.headers, Mapping) else self.headers
        return tuple(
            (name, value.encode() if isinstance(value, str) else value)
            for name, value in pairs
            if name != EVENT_ID_HEADER  # the harness's own
        )


class DocumentEncoder(Protocol):
    def __call__(self, document: Any) -> bytes: ...


def encode_json(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


class PayloadError(ValueError):
    """A team's payload could not be made into a record; says which source and record."""


def field_path(path: str) -> list[str]:
    """``$.customer.id`` or ``customer.id`` as its parts."""
    return [part for part in path.removeprefix("$").removeprefix(".").split(".") if part]


def _set(document: dict[str, Any], path: list[str], value: str) -> None:
    for part in path[:-1]:
        document = document.setdefault(part, {})
    document[path[-1]] = value


def _get(document: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(document, dict) or part not in document:
            return None
        document = document[part]
    return document


@dataclass(frozen=True)
class Encoding:
    """How a payload's document becomes bytes, with the identity fields written into it."""

    encode: DocumentEncoder = encode_json
    id_field: str | None = None
    key_field: str | None = None

    def key_of(self, payload: Payload) -> str | None:
        if payload.key is not None or self.key_field is None:
            return payload.key
        found = _get(payload.value, field_path(self.key_field))
        return None if found is None else str(found)

    def value(self, payload: Payload, key: str | None, event_id: str) -> bytes:
        value = payload.value
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, dict):
            value = dict(value)  # the generator's own document stays as it was
            if self.id_field:
                _set(value, field_path(self.id_field), event_id)
            if self.key_field and key is not None:
                _set(value, field_path(self.key_field), key)
        return self.encode(value)


Payloads = Callable[[random.Random, Faker], Iterator[Payload]]


@dataclass(frozen=True)
class PayloadSource:
    """A seeded stream of a team's messages and their encoding: a workload of its own, or the
    values of an incident's workload (:meth:`values_for`)."""

    name: str
    payloads: Payloads
    encoding: Encoding = field(default_factory=Encoding)
    seed: int = 0
    rate: float | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    #: ``(schema text, schema type)`` to register where apps read a registry's wire format
    registry_schema: tuple[str, str] | None = None

    def _stream(self) -> Iterator[Payload]:
        fake = Faker()
        fake.seed_instance(self.seed)
        return self.payloads(random.Random(self.seed), fake)

    def _record(self, stamper: Stamper, payload: Payload, key: str | None) -> WorkloadRecord:
        event_id = stamper.event_id()
        return WorkloadRecord(
            key,  # type: ignore[arg-type]  # a team's record may have no key
            event_id,
            stamper.next_seq(key),
            self.encoding.value(payload, key, event_id),
            payload.header_pairs(),
            payload.partition,
            payload.at_s,
            payload.expect,
        )

    def workload(self) -> Workload:
        """These messages as a workload of their own: their keys, partitions and times."""

        def build(_rng: random.Random, _fake: Faker, stamper: Stamper) -> Iterator[Step]:
            for payload in self._stream():
                yield self._record(stamper, payload, self.encoding.key_of(payload))

        return self._as_workload(self.name, build, self.rate, self.parameters)

    def values_for(self, shape: Workload) -> Workload:
        """``shape``'s records (keys, identities, pauses, rate, count) carrying these
        messages' values: an incident's traffic in a team's own payloads."""

        def build(_rng: random.Random, _fake: Faker, stamper: Stamper) -> Iterator[Step]:
            payloads = self._stream()
            for position, step in enumerate(shape.steps()):
                if not isinstance(step, WorkloadRecord):
                    yield step
                    continue
                payload = next(payloads, None)
                if payload is None:
                    raise PayloadError(
                        f"{self.name} ran out after {position} records; the incident's "
                        f"workload {shape.name} needs more: raise its count"
                    )
                yield WorkloadRecord(
                    step.key,
                    step.event_id,
                    step.seq,
                    # a tombstone stays one: a delete carries no payload
                    None
                    if step.value is None
                    else self.encoding.value(payload, step.key, step.event_id),
                    payload.header_pairs(),
                    step.partition,
                    step.at_s,
                    payload.expect,
                )

        parameters = {**shape.parameters, "payload": self.name}
        return self._as_workload(f"{shape.name}+{self.name}", build, shape.rate, parameters)

    def _as_workload(
        self, name: str, build: Callable[..., Iterator[Step]], rate: float | None, parameters: Any
    ) -> Workload:
        return Workload(
            name,
            self.seed,
            build,
            rate,
            parameters,
            id_field=self.encoding.id_field,
            registry_schema=self.registry_schema,
        )
