"""Record identity: every input carries a unique ``event_id``, its entity key and a per-key ``seq``.

The value is JSON holding ``event_id``, ``key`` and ``seq`` beside the payload; ``event_id`` is
also a header, so an app can copy it to its output without parsing the value.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

EVENT_ID_HEADER = "event_id"


@dataclass(frozen=True)
class WorkloadRecord:
    key: str
    event_id: str
    seq: int
    value: bytes

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        return [(EVENT_ID_HEADER, self.event_id.encode())]


@dataclass(frozen=True)
class Pause:
    """The topic goes quiet: nothing is produced for ``seconds``."""

    seconds: float


Step = WorkloadRecord | Pause


class Stamper:
    """Gives records their identity, deterministically from the workload's random source."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._seq: Counter[str] = Counter()

    def stamp(self, key: str, body: dict[str, Any], pad_to: int = 0) -> WorkloadRecord:
        event_id = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        seq = self._seq[key]
        self._seq[key] += 1
        document = {"event_id": event_id, "key": key, "seq": seq, **body}
        value = json.dumps(document, separators=(",", ":")).encode()
        if len(value) < pad_to:  # reach the requested size with a filler field
            document["padding"] = "x" * (pad_to - len(value) - len(',"padding":""'))
            value = json.dumps(document, separators=(",", ":")).encode()
        return WorkloadRecord(key, event_id, seq, value)


@dataclass(frozen=True)
class Workload:
    """A named, seeded sequence of records and pauses; ``steps()`` replays it identically."""

    name: str
    seed: int
    build: Callable[[random.Random, Faker, Stamper], Iterator[Step]] = field(repr=False)
    rate: float | None = None  # records per second; None: as fast as the broker acknowledges
    parameters: dict[str, Any] = field(default_factory=dict)

    def steps(self) -> Iterator[Step]:
        rng = random.Random(self.seed)
        fake = Faker()
        fake.seed_instance(self.seed)
        # identities come from their own source, named after the workload, so two different
        # workloads of one run never share an event_id even when they share a seed
        yield from self.build(rng, fake, Stamper(random.Random(f"{self.name}:{self.seed}")))

    def records(self) -> Iterator[WorkloadRecord]:
        return (step for step in self.steps() if isinstance(step, WorkloadRecord))
