"""Windows of exposure: the moments of a play at which a fault could break the service's
guarantee, read from its history (the group's commits in ``__consumer_offsets``, each input's
acknowledgement, each result's timestamp as the checker matched it to its input).

Lineage-driven fault injection (Alvaro, Rosen and Hellerstein, SIGMOD 2015) aims faults from
the lineage of a good outcome: which steps each result depended on. Here the lineage of an input
is its acknowledgement, the result written for it and the commit that passed it, and a window is
a moment where their order leaves the input exposed:

- **commit ahead of writes**: a commit passed inputs whose results were written after it (an
  at-least-once service that commits first loses them when it dies in between);
- **sends at a commit**: results written just before the commit that passed their inputs, whose
  acknowledgements may still have been on their way (a service that does not wait for them, or
  ignores a failed send, loses them when their answers come late);
- **writes ahead of commit**: results written before the commit that passes their inputs (under
  exactly-once without a transaction around both, a death in between writes them twice);
- **work in hand**: the moment most inputs were acknowledged but not yet answered (a rebalance
  then revokes partitions with work in hand).

Each is aimed at by one fault (:func:`aimed_faults`) placed just before the window opens.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_replay.history.store import DELIVERIES, read_stream

from .families import REQUESTS_TIMEOUT_S, Layout, Step

#: Results written this close before the commit that passed their inputs may not have been
#: acknowledged when it was made.
SEND_WINDOW_MS = 300
#: A fault is placed this long before its window, so that it waits when the window opens.
LEAD_S = 0.5
#: How many windows of one kind are aimed at: the first one and the widest.
PER_KIND = 2

COMMIT_AHEAD = "commit ahead of writes"
SENDS_AT_COMMIT = "sends at a commit"
WRITES_AHEAD = "writes ahead of commit"
WORK_IN_HAND = "work in hand"
#: The kinds, in the order they are aimed at.
WINDOW_KINDS = (COMMIT_AHEAD, SENDS_AT_COMMIT, WRITES_AHEAD, WORK_IN_HAND)


@dataclass(frozen=True)
class Window:
    kind: str
    #: When it opened (Unix seconds), and the inputs acknowledged ``LEAD_S`` before: where a
    #: fault aimed at it is placed (``after_acks``).
    at: float
    acks: int
    #: How many inputs it exposed.
    inputs: int

    def describe(self) -> str:
        return f"{self.kind} ({self.inputs} input(s), at {self.acks} acks)"


@dataclass(frozen=True)
class Lineage:
    """What a played run's history says of each input: its acknowledgement (``ts``,
    ``partition``, ``offset``), the group's commits on the input topic (``partition``,
    ``offset``, ``commit_ts_ms``) and the results the checker matched to inputs
    (``in_partition``, ``in_offset``, ``out_ts_ms``)."""

    acks: Sequence[Mapping[str, Any]]
    commits: Sequence[Mapping[str, Any]]
    deliveries: Sequence[Mapping[str, Any]]

    @classmethod
    def read(cls, run_dir: Path, input_topic: str | None = None) -> Lineage:
        """A played run's lineage (empty where it kept no history)."""
        events = run_dir / "events"
        acks = [e for e in read_stream(events / "produce.jsonl") if e.get("kind") == "ack"]
        topic = input_topic or (acks[0]["topic"] if acks else None)
        commits = [
            e
            for e in read_stream(events / "offsets.jsonl")
            if e.get("kind") == "commit" and e.get("topic") == topic
        ]
        return cls(acks, commits, read_stream(run_dir / DELIVERIES))

    def acked_before(self, at: float) -> int:
        """The inputs acknowledged ``LEAD_S`` before ``at``: where a fault aimed at ``at`` is
        placed."""
        return _acked(sorted(a["ts"] for a in self.acks), at)


def read_windows(run_dir: Path, input_topic: str | None = None) -> list[Window]:
    """The windows of a played run's history (none where it kept no history)."""
    lineage = Lineage.read(run_dir, input_topic)
    return windows(lineage.commits, lineage.deliveries, lineage.acks)


def windows(
    commits: Sequence[Mapping[str, Any]],
    deliveries: Sequence[Mapping[str, Any]],
    acks: Sequence[Mapping[str, Any]],
) -> list[Window]:
    """Every window of one service's play: ``commits`` as the offsets reader records them
    (``partition``, ``offset``, ``commit_ts_ms``), ``deliveries`` as the checker matched
    results to inputs (``in_partition``, ``in_offset``, ``out_ts_ms``), the workload's ``acks``
    (``ts``, ``partition``, ``offset``)."""
    ack_times = sorted(a["ts"] for a in acks)
    written = first_writes(deliveries)
    found = []
    for at_ms, offsets in commit_requests(commits):
        passed = [
            written[(partition, offset)]
            for partition, (start, end) in offsets.items()
            for offset in range(start, end)
            if (partition, offset) in written
        ]
        at = at_ms / 1000
        by_kind = {
            COMMIT_AHEAD: sum(ts_ms > at_ms for ts_ms in passed),
            SENDS_AT_COMMIT: sum(at_ms - SEND_WINDOW_MS <= ts_ms <= at_ms for ts_ms in passed),
            WRITES_AHEAD: sum(ts_ms <= at_ms for ts_ms in passed),
        }
        for kind, inputs in by_kind.items():
            if inputs:
                opened = at if kind != WRITES_AHEAD else min(passed) / 1000
                found.append(Window(kind, opened, _acked(ack_times, opened), inputs))
    busiest = _most_in_hand(ack_times, sorted(written.values()))
    if busiest is not None:
        at, inputs = busiest
        found.append(Window(WORK_IN_HAND, at, _acked(ack_times, at), inputs))
    return found


def _acked(ack_times: Sequence[float], at: float) -> int:
    """The inputs acknowledged ``LEAD_S`` before ``at``."""
    return bisect.bisect(ack_times, at - LEAD_S)


def first_writes(deliveries: Iterable[Mapping[str, Any]]) -> dict[tuple[int, int], int]:
    """When each input's first result was written (ms), by its partition and offset."""
    first: dict[tuple[int, int], int] = {}
    for row in deliveries:
        key = (row["in_partition"], row["in_offset"])
        first[key] = min(first.get(key, row["out_ts_ms"]), row["out_ts_ms"])
    return first


def commit_requests(
    commits: Iterable[Mapping[str, Any]],
) -> list[tuple[int, dict[int, tuple[int, int]]]]:
    """The group's commits as the requests that made them (one time for every partition a
    request committed), each with the offsets it moved past on each partition: from the
    partition's previous commit (or its start) to the one it made."""
    requests: dict[int, dict[int, int]] = defaultdict(dict)
    for commit in commits:
        requests[commit["commit_ts_ms"]][commit["partition"]] = commit["offset"]
    last: dict[int, int] = {}
    moved = []
    for at_ms in sorted(requests):
        passed = {}
        for partition, offset in requests[at_ms].items():
            start = last.get(partition, 0)
            if offset > start:
                passed[partition] = (start, offset)
            last[partition] = max(start, offset)
        if passed:
            moved.append((at_ms, passed))
    return moved


def _most_in_hand(acked: Sequence[float], written_ms: Sequence[int]) -> tuple[float, int] | None:
    """The moment most inputs were acknowledged but had no result yet, and how many."""
    best: tuple[float, int] | None = None
    for at in acked:
        in_hand = bisect.bisect(acked, at) - bisect.bisect(written_ms, at * 1000)
        if in_hand > 0 and (best is None or in_hand > best[1]):
            best = (at, in_hand)
    return best


def aimed_faults(
    found: Sequence[Window], layout: Layout, guarantee: str, earliest: int, latest: int
) -> list[tuple[Window, str, tuple[Step, ...]]]:
    """One fault for each window worth aiming at, as ``(window, family, steps)``: up to
    ``PER_KIND`` of each kind (the first, the widest), placed between ``earliest`` and
    ``latest`` acks. Writes ahead of a commit break only exactly-once."""
    aims = []
    for kind in WINDOW_KINDS:
        if kind == WRITES_AHEAD and guarantee != "exactly-once":
            continue
        placed = [w for w in found if w.kind == kind and earliest <= w.acks <= latest]
        chosen = placed[:1] + sorted(placed[1:], key=lambda w: -w.inputs)[: PER_KIND - 1]
        for window in chosen:
            aims += [(window, family, steps) for family, steps in _faults(window, layout)]
    return aims


def _faults(window: Window, layout: Layout) -> list[tuple[str, tuple[Step, ...]]]:
    """The faults that strike inside ``window``, by the family each belongs to."""
    if window.kind == WORK_IN_HAND:
        extra = layout.instances  # a member joins: the group rebalances with work in hand
        joins = {"do": "start_instance", "instance": extra}
        leaves = {"do": "stop_instance", "instance": extra}
        return [("groups", (joins, {"do": "idle", "seconds": 3.0}, leaves))]
    if window.kind == SENDS_AT_COMMIT:
        late = {**_request("Produce", "delay"), "delay_ms": 5000, "count": 3}
        return [("requests", (late,))]
    if window.kind == WRITES_AHEAD:
        return [("requests", (_request("Produce", "kill_sender"),))]
    commits = ("OffsetCommit", "TxnOffsetCommit") if layout.transactional else ("OffsetCommit",)
    return [("requests", (_request(api, "kill_sender"),)) for api in commits]


def _request(api: str, action: str) -> dict[str, Any]:
    """The service's next ``api`` request from where the fault is placed."""
    return {
        "do": "kafka_fault",
        "api": api,
        "action": action,
        "clients": "app",
        "nth": 1,
        "count": 1,
        "timeout_s": REQUESTS_TIMEOUT_S,
    }
