"""What a run's streams say beyond their events: facts derived once, for every reader.

Pure functions of recorded events, shared by the symptoms (which judge a run) and the HTML
report (which draws it), so both read a run the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

Event = dict[str, Any]
#: A batch the app took from an input partition: ``topic``, ``partition``, ``first``, ``last``.
Span = dict[str, Any]
#: Output results further apart than this (seconds) belong to different deliveries.
ARRIVAL_GAP_S = 0.25


def consumed_spans(
    app: Sequence[Event] | None, deliveries: Sequence[Event] | None, input_topic: str | None
) -> list[tuple[float, Span]]:
    """(time, span) for each batch the app took from an input partition.

    From the app's ``consumed`` reports where it sends reports; otherwise from the output: a
    run of results of one input partition, consecutive in output time, is one span.
    """
    if app:
        return [
            (e["ts"], span)
            for e in app
            if e.get("kind") == "consumed"
            for span in e.get("partitions", [])
            if span.get("topic") == input_topic
        ]
    return spans_from_output(deliveries or [])


def spans_from_output(deliveries: Iterable[Event]) -> list[tuple[float, Span]]:
    """Batches as the output shows them, per input partition: results close in time form one
    span; a result of an input delivered before, below where the span reached, or a long gap,
    starts another. Results out of order within one millisecond are not mistaken for a jump.
    """
    spans: list[tuple[float, Span]] = []
    open_spans: dict[int, tuple[float, Span]] = {}
    seen: set[tuple[int, int]] = set()
    for row in deliveries:
        if row.get("out_ts_ms") is None:  # a table's row without a time column: no moment
            continue
        moment, partition, offset = row["out_ts_ms"] / 1000, row["in_partition"], row["in_offset"]
        repeat = (partition, offset) in seen
        seen.add((partition, offset))
        current = open_spans.get(partition)
        if current is not None and moment - current[0] <= ARRIVAL_GAP_S:
            span = current[1]
            if not (repeat and offset <= span["last"]):
                span["first"], span["last"] = min(span["first"], offset), max(span["last"], offset)
                open_spans[partition] = (moment, span)
                continue
        span = {"topic": "", "partition": partition, "first": offset, "last": offset}
        spans.append((moment, span))
        open_spans[partition] = (moment, span)
    return spans


def arrivals(spans: Iterable[tuple[float, Span]], partition: int) -> list[tuple[float, int, int]]:
    """(time, first, last offset) of each batch of ``partition`` among ``spans``."""
    return [(ts, s["first"], s["last"]) for ts, s in spans if s["partition"] == partition]


def per_second(times: Iterable[float]) -> tuple[list[float], list[int]]:
    """Counts per whole second, with the empty seconds between them."""
    counts = Counter(int(t // 1) for t in times)
    if not counts:
        return [], []
    seconds = list(range(min(counts), max(counts) + 1))
    return [float(s) for s in seconds], [counts.get(s, 0) for s in seconds]


def repeats(deliveries: Iterable[Event]) -> list[Event]:
    """Every delivery of an input that had already been delivered (a duplicate's moment)."""
    seen: set[str] = set()
    found = []
    for delivery in deliveries:
        if delivery["event_id"] in seen:
            found.append(delivery)
        seen.add(delivery["event_id"])
    return found
