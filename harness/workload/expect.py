"""Which inputs a correct service puts somewhere other than its output, decided as they are
made: a team's predicate over each record marks it, and the mark travels with its ack.

A generator marks a record itself with ``Payload(expect=...)``; a predicate (``[expect] bad``
or ``filtered``) marks the records it names, so a workload of any source can carry poison
pills or records a service drops by design.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from faker import Faker

from .payloads import PayloadError
from .records import Stamper, Step, Workload, WorkloadRecord


@dataclass(frozen=True)
class InputRecord:
    """An input as a predicate sees it, before it is sent."""

    topic: str  # the topic's name in the incident definition
    key: str | None
    value: bytes
    headers: dict[str, bytes]
    event_id: str


#: ``module:function(InputRecord) -> bool``, by the place it puts the records it names in.
Predicates = Mapping[str, tuple[str, Callable[[InputRecord], object]]]


def marked(workload: Workload, topic: str, predicates: Predicates) -> Workload:
    """``workload`` whose records the predicates name are marked for their place (the first
    predicate that names a record decides); a record its generator marked keeps its mark."""
    if not predicates:
        return workload

    def build(_rng: object, _fake: Faker, _stamper: Stamper) -> Iterator[Step]:
        for position, step in enumerate(workload.steps()):
            if isinstance(step, WorkloadRecord) and step.expect is None:
                step = _mark(step, topic, predicates, position)
            yield step

    return replace(workload, build=build)


def _mark(
    record: WorkloadRecord, topic: str, predicates: Predicates, position: int
) -> WorkloadRecord:
    seen = InputRecord(topic, record.key, record.value, dict(record.headers), record.event_id)
    for place, (spec, predicate) in predicates.items():
        try:
            named = predicate(seen)
        except Exception as exc:  # the team's code: whatever it raises is reported
            raise PayloadError(
                f"the predicate {spec} failed on record {position} of topic {topic}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if named:
            return replace(record, expect=place)
    return record
