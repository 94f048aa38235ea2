"""Record identity: every input carries a unique ``event_id``, its entity key and a per-key ``seq``.

The value is JSON holding ``event_id``, ``key`` and ``seq`` beside the payload; ``event_id`` is
also a header, so an app can copy it to its output without parsing the value.

Stamping is on the producer's hot path (tens of thousands of records a second), so the value is
assembled from text rather than by ``json.dumps`` of a merged dict twice; the bytes are the same
as ``json.dumps(document, separators=(",", ":"))`` would give.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from faker import Faker

EVENT_ID_HEADER = "event_id"
IDENTITY_FIELDS = ("event_id", "key", "seq")
#: what ``"padding":""`` adds to a document besides the filler itself
_PADDING_FRAME = len(',"padding":""')
# uuid.UUID(int=bits, version=4) without the object: clear, then set, the version and variant
_V4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_V4_SET = (0x8000 << 48) | (4 << 76)


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    key: str
    event_id: str
    seq: int
    #: None: a tombstone, the delete of its key on a compacted topic (identity in the header)
    value: bytes | None
    #: headers of the record's own beside ``event_id`` (a team's payload or a capture's)
    extra_headers: tuple[tuple[str, bytes], ...] = ()
    #: the partition to write to; None: the key's, as Kafka's Java producer picks it
    partition: int | None = None
    #: when to send it, in seconds from the workload's start (recorded traffic); None: by rate
    at_s: float | None = None
    #: where a correct service puts it, when not once on the output (``dead_letter``,
    #: ``filtered``): recorded with its ack for the checker
    expect: str | None = None

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        return [(EVENT_ID_HEADER, self.event_id.encode()), *self.extra_headers]


@dataclass(frozen=True)
class Pause:
    """The topic goes quiet: nothing is produced for ``seconds``."""

    seconds: float


Step = WorkloadRecord | Pause


def encode(body: dict[str, Any]) -> str:
    """Compact JSON, as every record value is written."""
    return json.dumps(body, separators=(",", ":"))


class Stamper:
    """Gives records their identity, deterministically from the workload's random source."""

    def __init__(self, rng: random.Random) -> None:
        self._bits = rng.getrandbits
        self._seq: dict[str | None, int] = {}
        self._quoted: dict[str, str] = {}  # each key as a JSON string, made once

    def event_id(self) -> str:
        """A version-4 UUID from 128 seeded bits; the same text ``uuid.UUID`` would give."""
        h = "%032x" % (self._bits(128) & _V4_CLEAR | _V4_SET)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def next_seq(self, key: str | None) -> int:
        """The next ``seq`` of ``key``'s records: 0, 1, ..."""
        seq = self._seq.get(key, 0)
        self._seq[key] = seq + 1
        return seq

    def stamp(self, key: str, body: dict[str, Any], pad_to: int = 0) -> WorkloadRecord:
        """The record of ``body`` for ``key``, padded with a filler field to ``pad_to`` bytes."""
        if "event_id" in body or "key" in body or "seq" in body:
            raise ValueError(f"a record body may not set its own {', '.join(IDENTITY_FIELDS)}")
        return self.stamp_encoded(key, encode(body), pad_to)

    def tombstone(self, key: str) -> WorkloadRecord:
        """The delete of ``key``: no value, its identity in the ``event_id`` header alone."""
        return WorkloadRecord(key, self.event_id(), self.next_seq(key), None)

    def stamp_encoded(self, key: str, body_json: str | bytes, pad_to: int = 0) -> WorkloadRecord:
        """Like :meth:`stamp` for a body already encoded as a JSON object (``encode(body)``).

        Lets a generator that republishes a large document re-encode only what changed; a
        ``bytes`` body is copied once, where text would be copied and then encoded.
        """
        event_id = self.event_id()
        seq = self.next_seq(key)
        quoted = self._quoted.get(key)
        if quoted is None:
            quoted = self._quoted[key] = json.dumps(key)
        head = f'{{"event_id":"{event_id}","key":{quoted},"seq":{seq}'
        if len(body_json) <= 2:  # {}
            value = (head + "}").encode()
        elif isinstance(body_json, str):
            value = (head + "," + body_json[1:]).encode()
        else:
            value = b"".join((head.encode(), b",", memoryview(body_json)[1:]))
        if len(value) < pad_to:  # reach the requested size with a filler field, last
            filler = b"x" * (pad_to - len(value) - _PADDING_FRAME)
            value = b"".join((value[:-1], b',"padding":"', filler, b'"}'))
        return WorkloadRecord(key, event_id, seq, value)


@dataclass(frozen=True)
class Workload:
    """A named, seeded sequence of records and pauses; ``steps()`` replays it identically."""

    name: str
    seed: int
    build: Callable[[random.Random, Faker, Stamper], Iterator[Step]] = field(repr=False)
    rate: float | None = None  # records per second; None: as fast as the broker acknowledges
    parameters: dict[str, Any] = field(default_factory=dict)
    #: the payload field that carries each record's ``event_id`` (a team's own payloads)
    id_field: str | None = None
    #: ``(schema text, schema type)`` a schema registry must hold for the app to read values
    registry_schema: tuple[str, str] | None = None
    #: the incident's topic it is written to, by its name there; None: the first input topic
    topic: str | None = None
    #: how old each record's timestamp (CreateTime) is when it is sent, in seconds: a backfill
    #: of old events; None: the producer's own time (librdkafka stamps the send)
    timestamp_age_s: float | None = None

    def steps(self) -> Iterator[Step]:
        rng = random.Random(self.seed)
        fake = Faker()
        fake.seed_instance(self.seed)
        # identities come from their own source, named after the workload, so two different
        # workloads of one run never share an event_id even when they share a seed
        yield from self.build(rng, fake, Stamper(random.Random(f"{self.name}:{self.seed}")))

    def records(self) -> Iterator[WorkloadRecord]:
        return (step for step in self.steps() if isinstance(step, WorkloadRecord))

    def framed(self, prefix: bytes) -> Workload:
        """Every value behind ``prefix``: a schema registry's wire format (magic byte and
        schema id) before the encoded payload."""

        def build(_rng: random.Random, _fake: Faker, _stamper: Stamper) -> Iterator[Step]:
            for step in self.steps():
                if isinstance(step, WorkloadRecord) and step.value is not None:
                    step = replace(step, value=prefix + step.value)
                yield step

        return replace(self, build=build)
