"""Which entity key each record gets: a fixed set of distinct keys and a skew to pick them by.

A team's schema says what a document holds, not how its keys repeat; a key space decides that,
so an incident can replay the hot partition a celebrity's key makes as well as an even spread.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable
from itertools import accumulate

#: How a key is picked: ``uniform``, ``zipf`` (weights 1/rank**ZIPF_S) or ``hot`` (one key
#: takes HOT_SHARE of the records).
SKEWS = ("uniform", "zipf", "hot")
ZIPF_S = 1.1
HOT_SHARE = 0.9


class KeySpace:
    """``size`` distinct keys, made once, and a skew to pick them by.

    ``uniform``: every key alike. ``zipf``: the key of rank r weighs 1/r**1.1 (ZIPF_S), so a few
    keys carry most records, as a popular customer's orders do. ``hot``: one key takes 90%
    (HOT_SHARE) of the records and the rest share the remainder evenly, the partition a
    celebrity's key lands on. ``make(n)`` makes the n-th candidate key; a make that repeats
    itself (a currency code has ~160 values) gets a ``-n`` suffix past its distinct values.
    """

    def __init__(
        self, size: int, skew: str = "uniform", make: Callable[[int], str] | None = None
    ) -> None:
        if size < 1:
            raise ValueError(f"a key space needs at least 1 key, not {size}")
        if skew not in SKEWS:
            raise ValueError(f"skew must be one of {', '.join(SKEWS)}, not {skew!r}")
        self.skew = skew
        self.keys = _distinct(make or (lambda n: f"key-{n}"), size)
        if skew == "zipf":
            weights = [1 / rank**ZIPF_S for rank in range(1, size + 1)]
        elif skew == "hot" and size > 1:
            weights = [HOT_SHARE] + [(1 - HOT_SHARE) / (size - 1)] * (size - 1)
        else:
            weights = []
        self._cumulative = list(accumulate(weights))

    def pick(self, rng: random.Random) -> str:
        """One key, drawn with ``rng``."""
        if not self._cumulative:
            return rng.choice(self.keys)
        at = bisect.bisect(self._cumulative, rng.random() * self._cumulative[-1])
        return self.keys[min(at, len(self.keys) - 1)]


def _distinct(make: Callable[[int], str], size: int) -> list[str]:
    keys: dict[str, None] = {}
    n = 0
    while len(keys) < size and n < 3 * size + 100:
        keys.setdefault(str(make(n)), None)
        n += 1
    while len(keys) < size:
        keys.setdefault(f"{make(n)}-{n}", None)
        n += 1
    return list(keys)
