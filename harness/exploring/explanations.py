"""The windows that explain a play that broke the service: where a fault must strike for the
same break to come back in every play.

A fault drawn at random breaks a service only when it happens to land inside a window of
exposure, so its schedule breaks the service now and then. The play that broke it says which
window it landed in: the records it lost were passed by one commit (the service died or was
revoked between that commit and their results), the records it repeated were written before
the commit that would have passed them. A fault aimed at that window
(:func:`.windows.aimed_faults`) explains the break, and strikes there in every play.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .windows import (
    COMMIT_AHEAD,
    SENDS_AT_COMMIT,
    WORK_IN_HAND,
    WRITES_AHEAD,
    Lineage,
    Window,
    commit_requests,
    first_writes,
)

#: What may explain lost records, at the commit that passed them, the likeliest first: the
#: service died after the commit and before their results (it commits first); their sends
#: were still unanswered (it does not wait for them, or ignores a failed one); it held them
#: when its partitions were revoked (it drops its work in hand and commits).
LOST_BY = (COMMIT_AHEAD, SENDS_AT_COMMIT, WORK_IN_HAND)


def explaining_windows(run_dir: Path, kind: str) -> list[Window]:
    """The windows a play that broke the service with ``kind`` shows its break came from,
    the likeliest first (none for a kind no single window explains, such as a hang)."""
    lineage = Lineage.read(run_dir)
    if kind == "lost":
        return lost_at(lineage)
    if kind == "duplicated":
        return repeated_at(lineage)
    return []


def lost_at(lineage: Lineage) -> list[Window]:
    """The commit that passed the most acknowledged inputs that have no result: each way of
    losing them there (``LOST_BY``)."""
    written = first_writes(lineage.deliveries)
    lost = {
        (a["partition"], a["offset"])
        for a in lineage.acks
        if (a["partition"], a["offset"]) not in written
    }
    passed: Counter[int] = Counter()
    for at_ms, offsets in commit_requests(lineage.commits):
        passed[at_ms] = sum(
            (partition, offset) in lost
            for partition, (start, end) in offsets.items()
            for offset in range(start, end)
        )
    most = max(passed.values(), default=0)
    if not most:
        return []
    at = min(at_ms for at_ms, n in passed.items() if n == most) / 1000
    return [Window(kind, at, lineage.acked_before(at), most) for kind in LOST_BY]


def repeated_at(lineage: Lineage) -> list[Window]:
    """The first write of an input written more than once: a death after it and before the
    commit that would pass it writes it again."""
    writes = Counter((d["in_partition"], d["in_offset"]) for d in lineage.deliveries)
    repeated = {key for key, n in writes.items() if n > 1}
    first = first_writes(
        d for d in lineage.deliveries if (d["in_partition"], d["in_offset"]) in repeated
    )
    if not first:
        return []
    at = min(first.values()) / 1000
    return [Window(WRITES_AHEAD, at, lineage.acked_before(at), len(repeated))]
