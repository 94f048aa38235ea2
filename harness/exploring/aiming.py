"""Where an exploration aims its faults: at the windows of exposure a play shows
(:mod:`.windows`), and at the window a break came from (:mod:`.explanations`).

Pure decisions on plays already made: which aimed faults a set of windows gives, on how many
brokers, and which window kinds have been aimed at, so that a later play's new kind is aimed
at next (Mallory's steering by what was observed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .explanations import explaining_windows
from .families import Family, Layout
from .schedule import EARLIEST, MAX_FAULTS, Fault, Schedule, latest_ack
from .windows import Window, aimed_faults, read_windows


class Aiming:
    """The aimed faults of one exploration: of the ``families`` drawn from, placed where
    faults are placed in a workload of ``records``."""

    def __init__(self, families: Sequence[Family], guarantee: str, records: int) -> None:
        self.drawn_from = {family.name for family in families}
        self.guarantee = guarantee
        self.earliest, self.latest = int(records * EARLIEST), latest_ack(records)
        #: How many faults were aimed at each kind of window.
        self.kinds: Counter[str] = Counter()

    def faults(self, found: Sequence[Window], layout: Layout) -> list[Fault]:
        """A fault aimed at each of the windows ``found`` worth aiming at (:func:`aimed_faults`),
        of the families drawn from, each counted as aimed at its kind."""
        faults = [
            Fault(family, window.acks, steps, window)
            for window, family, steps in aimed_faults(
                found, layout, self.guarantee, self.earliest, self.latest
            )
            if family in self.drawn_from
        ]
        self.kinds.update(window.kind for window in (f.aim for f in faults) if window)
        return faults

    def new_kind(self, schedule: Schedule, run_dir: Path) -> tuple[Fault, ...] | None:
        """For a play of ``schedule`` that held: its faults and one aimed at the first window
        of a kind no fault was aimed at yet (the faults drawn may have opened it), if any and
        the schedule has room for one more fault."""
        if len(schedule.faults) >= MAX_FAULTS:
            return None
        new = [w for w in read_windows(run_dir) if not self.kinds[w.kind]]
        aimed = aimed_faults(new, schedule.layout, self.guarantee, self.earliest, self.latest)
        for window, family, steps in aimed:
            if family in self.drawn_from:
                self.kinds[window.kind] += 1
                return (*schedule.faults, Fault(family, window.acks, steps, window))
        return None

    def explanations(self, schedule: Schedule, kind: str, run_dir: Path) -> list[Schedule]:
        """``schedule`` with its faults replaced by one aimed at the window the play that broke
        the service with ``kind`` (its run directory) shows the break came from, one schedule
        for each way that window may have broken it, the likeliest first (not ``schedule``
        itself, when it is one of them). A break later than faults are placed is aimed at from
        the latest place: the fault waits there for the next such request."""
        found = [
            replace(window, acks=min(max(window.acks, self.earliest), self.latest))
            for window in explaining_windows(run_dir, kind)
        ]
        return [
            replace(schedule, faults=(fault,))
            for fault in self.faults(found, schedule.layout)
            if (fault,) != schedule.faults
        ]
