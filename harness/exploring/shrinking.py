"""Shrinking a schedule's faults to the fewest and simplest that still break the service.

Delta debugging at its finest grain (each fault removed in turn, again after every removal
that kept the failure) and then each remaining fault made simpler (:func:`simpler_faults`).
A schedule holds at most a few faults, so that grain is all ddmin would reach, and each
candidate is a minute-long play whose failure must come back (``still_fails`` confirms it), so
candidates are tried one at a time, the cheapest reduction first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .schedule import Fault

StillFails = Callable[[tuple[Fault, ...]], bool]


def shrink(
    faults: Sequence[Fault],
    still_fails: StillFails,
    simpler: Callable[[Fault], Iterable[Fault]],
    out_of_time: Callable[[], bool] = lambda: False,
) -> tuple[Fault, ...]:
    """The smallest faults found that ``still_fails``; ``faults`` itself is known to fail.
    None at all when the service fails without any fault."""
    kept = tuple(faults)
    removed = True
    while removed and kept:
        removed = False
        for i in range(len(kept)):
            if out_of_time():
                return kept
            candidate = kept[:i] + kept[i + 1 :]
            if still_fails(candidate):
                kept, removed = candidate, True
                break
    i = 0
    while i < len(kept):
        for smaller in simpler(kept[i]):
            if out_of_time():
                return kept
            candidate = (*kept[:i], smaller, *kept[i + 1 :])
            if still_fails(candidate):
                kept = candidate
                break
        else:
            i += 1
    return kept
