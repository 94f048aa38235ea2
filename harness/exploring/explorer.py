"""The exploration itself: draw a schedule, play it against the team's service, and when its
guarantee breaks, confirm it, check that the reference service survives it, shrink it and
write it down.

Every play is a real run of the engine (brokers, the app as processes, the checker on Spark),
given to a player (:mod:`.players`): one after another in this process, or side by side in
lanes, each keeping its brokers and Spark warm between plays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_replay.report.outcome import Outcome

from .families import Family
from .players import Player
from .schedule import RECORDS, Fault, Schedule, definition_text, draw, simpler_faults
from .shape import ServiceShape
from .shrinking import shrink
from .stalls import stall_account

#: What breaks a service, the worst first, with the symptom that says so in a definition.
KINDS: dict[str, tuple[str, str]] = {
    "lost": ("inputs_lost_in_worst_place", ">= 1"),
    "misrouted": ("inputs_misrouted", ">= 1"),
    "duplicated": ("reprocessed", ">= 1"),
    "reordered": ("reordered", ">= 1"),
    "not drained": ("backlog_drained", "== false"),
}
#: A finding must come back in this many of its plays.
CONFIRM_PLAYS, CONFIRM_NEEDED = 3, 2
#: The reference service must hold in every one of this many plays of a finding's schedule
#: (side by side with ``--jobs 2``): played once, it once held by chance under a schedule that
#: stalls it one play in two, and the correct service was "found" stalling.
REFERENCE_PLAYS = 2
#: The service's first plays that could not be played before the exploration gives up: a
#: service that does not start, or a cluster that does not serve, would spend the budget.
ERRORS_IN_A_ROW = 3


class ExploreError(ValueError):
    """The exploration cannot go on (its message is the one ``error:`` line)."""


def kinds_of(outcome: Outcome, guarantee: str, ordered: bool) -> set[str]:
    """What a played run says broke: lost, misrouted (not in the place ``[expect]`` gives them)
    or (under exactly-once) duplicated inputs, results out of their keys' order (when order is
    promised), a backlog never drained.

    Not a crash loop by itself: the supervisor counts the harness's own kills toward one, as a
    deployment counts every exit, so drawn kills make one of any service, the reference's too.
    A service that loops on its own leaves its backlog undrained, which is the finding."""
    found = set()
    if outcome.anomalies.get("lost", 0):
        found.add("lost")
    if outcome.anomalies.get("misrouted", 0):
        found.add("misrouted")
    if guarantee == "exactly-once" and outcome.anomalies.get("duplicate", 0):
        found.add("duplicated")
    if ordered and outcome.anomalies.get("reordered", 0):
        found.add("reordered")
    unseen = ("unseen_at_deadline", "behind_open_transaction")
    if outcome.symptoms.get("backlog_drained") is False or any(
        outcome.anomalies.get(name, 0) for name in unseen
    ):
        found.add("not drained")
    return found


@dataclass
class Tried:
    """One play: which schedule, against which service, and what it found."""

    schedule: str
    faults: int
    service: str
    kinds: list[str]
    error: str | None
    seconds: float


@dataclass
class Finding:
    kind: str
    drawn: Schedule
    shrunk: Schedule
    path: Path
    #: Seconds from the exploration's start until it was written.
    found_s: float
    #: Why shrinking stopped before it was done (the budget ran out, Ctrl-C), if it did.
    cut_short: str | None = None
    #: For a hang: what the service was doing when it stopped, from a play of ``shrunk``.
    stalled: list[str] = field(default_factory=list)


@dataclass
class Exploration:
    """What an exploration tried and found, kept as it goes (Ctrl-C keeps what was found)."""

    seed: int
    tried: list[Tried] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: Schedules whose failure did not come back 2 of 3 times.
    unconfirmed: list[str] = field(default_factory=list)
    #: Schedules the reference service did not survive either: Kafka's or the harness's.
    apart: list[str] = field(default_factory=list)
    schedules: int = 0
    started: float = field(default_factory=time.monotonic)
    #: ``explore.md``, once written.
    report: Path | None = None


class Explorer:
    """Plays schedules against ``app`` until ``budget_s`` is spent or ``wanted`` findings."""

    def __init__(
        self,
        player: Player,
        *,
        app: str,
        guarantee: str,
        image: str | None = None,
        families: Sequence[Family],
        seed: int,
        budget_s: float,
        out_dir: Path,
        work_dir: Path,
        ordered: bool = False,
        wanted: int = 1,
        records: int = RECORDS,
        service: ServiceShape | None = None,
        progress: Callable[[str], None] = print,
    ) -> None:
        self.player, self.app, self.guarantee, self.image = player, app, guarantee, image
        self.service = service
        self.families, self.budget_s = families, budget_s
        self.ordered, self.wanted, self.records = ordered, wanted, records
        self.out_dir, self.work_dir, self.progress = out_dir, work_dir, progress
        self.result = Exploration(seed)
        self._plays = 0
        #: Each schedule's (name and timeline) account of its last play that did not drain.
        self._stalls: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        self._errors_in_a_row = 0
        self._played_once = False

    def out_of_time(self) -> bool:
        return time.monotonic() - self.result.started >= self.budget_s

    def would_overrun(self, seconds: float) -> bool:
        """Whether work taking ``seconds`` from now would end past the budget."""
        return time.monotonic() - self.result.started + seconds > self.budget_s

    def explore(self) -> Exploration:
        """Draw and play schedules until the budget is spent; the result, as far as it got.

        As many schedules are drawn at a time as the player plays side by side."""
        while not self.out_of_time() and len(self.result.findings) < self.wanted:
            drawn = [self._draw() for _ in range(self.player.jobs)]
            found = self.play_all([(schedule, "vulnerable", None) for schedule in drawn])
            for schedule, kinds in zip(drawn, found, strict=True):
                if kinds and len(self.result.findings) < self.wanted:
                    self._follow(schedule, next(k for k in KINDS if k in kinds))
        return self.result

    def _draw(self) -> Schedule:
        schedule = draw(
            self.result.seed,
            self.result.schedules,
            self.families,
            self.records,
            transactional=self.guarantee == "exactly-once",
        )
        self.result.schedules += 1
        self.progress(f"schedule {schedule.index}: " + "; ".join(schedule.timeline()))
        return schedule

    def _follow(self, schedule: Schedule, kind: str) -> None:
        """Confirm a schedule that broke the service, check it is fair, shrink and keep it."""
        if not self.confirmed(schedule, kind, already=1):
            self.result.unconfirmed.append(schedule.name)
            self.progress(f"  {schedule.name}: {kind} did not come back: not kept")
            return
        if self.reference_breaks(schedule):
            self.result.apart.append(schedule.name)
            return
        self.progress(f"  {kind}, confirmed; shrinking {len(schedule.faults)} fault(s)")
        smallest = [schedule]  # the smallest confirmed so far: kept on Ctrl-C as well
        cut_short: list[str] = []
        try:
            shrunk = self._shrunk(kind, schedule, smallest, cut_short)
        except KeyboardInterrupt:
            self._keep(kind, schedule, smallest[-1], "interrupted")
            raise
        self._keep(kind, schedule, shrunk, cut_short[0] if cut_short else None)

    def play(self, schedule: Schedule, profile: str, kind: str | None = None) -> set[str]:
        """One real run of ``schedule``; what broke (nothing when the run itself failed)."""
        return self.play_all([(schedule, profile, kind)])[0]

    def play_all(self, plays: Sequence[tuple[Schedule, str, str | None]]) -> list[set[str]]:
        """Real runs of each ``(schedule, profile, kind looked for)``, side by side as the
        player can; what broke in each."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        given = []
        for schedule, profile, kind in plays:
            self._plays += 1
            name = f"{schedule.name}-play-{self._plays}"
            path = self.work_dir / f"{name}.toml"
            # every kind's symptom named, so that each is measured; only ``kind``'s when confirming
            signature = dict([KINDS[kind]]) if kind else dict(KINDS.values())
            text = definition_text(
                schedule,
                self.app,
                self.guarantee,
                signature,
                name=name,
                image=self.image,
                service=self.service,
            )
            path.write_text(text)
            given.append((path, profile))
        started = time.monotonic()
        outcomes = self.player.play(given)
        seconds = time.monotonic() - started
        found_each = []
        for (schedule, profile, _), outcome in zip(plays, outcomes, strict=True):
            found = set() if outcome.error else kinds_of(outcome, self.guarantee, self.ordered)
            found_each.append(found)
            service = "yours" if profile == "vulnerable" else "reference"
            if service == "yours" and "not drained" in found:
                self._stalls[_played(schedule)] = stall_account(outcome)
            self.result.tried.append(
                Tried(
                    schedule.name,
                    len(schedule.faults),
                    service,
                    sorted(found),
                    outcome.error,
                    round(outcome.duration_s, 1),
                )
            )
            said = ", ".join(sorted(found)) or (
                f"did not play: {outcome.error}" if outcome.error else f"{self.guarantee} held"
            )
            stages = ", ".join(
                f"{stage} {s:.0f} s" for stage, s in outcome.stage_s.items() if s >= 1
            )
            self.progress(f"  {schedule.name}, {service}: {said} ({stages})")
            self._give_up_after(service, outcome.error)
        if len(plays) > 1:
            how = "side by side" if self.player.jobs > 1 else "one after the other"
            self.progress(f"  {len(plays)} plays {how} in {seconds:.0f} s")
        return found_each

    def _give_up_after(self, service: str, error: str | None) -> None:
        """Stop when the service's first plays all failed to play: once it has played, a play
        that fails is the schedule's (a fault waiting for requests a stalled service no longer
        sends), not a service that cannot run."""
        if service != "yours" or self._played_once:
            return
        self._played_once = not error
        self._errors_in_a_row = self._errors_in_a_row + 1 if error else 0
        if self._errors_in_a_row >= ERRORS_IN_A_ROW:
            raise ExploreError(
                f"your service could not be played the first {ERRORS_IN_A_ROW} times; the last "
                f"time: {error}"
            )

    def confirmed(
        self, schedule: Schedule, kind: str, already: int = 0, every_time: bool = False
    ) -> bool:
        """Whether ``kind`` comes back in 2 of 3 plays (``already``: plays that showed it),
        playing as many at once as may still be needed and the player plays side by side.

        ``every_time``: in each of 2 plays, the first miss rejecting the schedule (a shrinking
        candidate: a smaller schedule that breaks the service only now and then would hand
        over a definition that replays now and then, and a smaller finding missed costs less
        than a play).
        """
        hits, plays = already, already
        while hits < CONFIRM_NEEDED and hits + CONFIRM_PLAYS - plays >= CONFIRM_NEEDED:
            at_once = min(self.player.jobs, CONFIRM_NEEDED - hits)
            found = self.play_all([(schedule, "vulnerable", kind)] * at_once)
            got = sum(kind in kinds for kinds in found)
            if every_time and got < at_once:
                return False
            hits, plays = hits + got, plays + at_once
        return hits >= CONFIRM_NEEDED

    def reference_breaks(self, schedule: Schedule) -> bool:
        """Whether the catalog's correct service for the guarantee breaks under ``schedule`` in
        any of ``REFERENCE_PLAYS`` plays: a schedule that breaks it now and then is no fairer
        than one that always does."""
        plays = [(schedule, "remediated", None)] * REFERENCE_PLAYS
        found = set().union(*self.play_all(plays))
        if found:
            self.progress(
                f"  the reference service broke too ({', '.join(sorted(found))}): "
                "the schedule, not the service; reported apart"
            )
        return bool(found)

    def _shrunk(
        self, kind: str, schedule: Schedule, smallest: list[Schedule], cut_short: list[str]
    ) -> Schedule:
        longest_s = 0.0  # the longest a candidate took: what the next one may take

        def still_fails(faults: tuple[Fault, ...]) -> bool:
            nonlocal longest_s
            candidate = replace(schedule, faults=faults)
            self.progress("  trying " + ("; ".join(candidate.timeline()) or "no fault"))
            began = time.monotonic()
            try:
                if self.confirmed(candidate, kind, every_time=True):
                    smallest.append(candidate)
                    return True
                return False
            finally:
                longest_s = max(longest_s, time.monotonic() - began)

        def simpler(fault: Fault) -> Iterator[Fault]:
            return simpler_faults(fault, schedule.layout.records)

        def out_of_time() -> bool:  # before a candidate: one that would end past it is not begun
            if self.out_of_time() or self.would_overrun(longest_s):
                cut_short.append("the budget ran out")
                return True
            return False

        faults = shrink(schedule.faults, still_fails, simpler, out_of_time)
        shrunk = replace(schedule, faults=faults)
        if faults != schedule.faults and self.reference_breaks(shrunk):
            return schedule
        return shrunk

    def _keep(
        self, kind: str, drawn: Schedule, shrunk: Schedule, cut_short: str | None = None
    ) -> None:
        name = f"{kind.replace(' ', '-')}-{drawn.seed}-{drawn.index}"
        path = self.out_dir / f"{name}.toml"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(
            definition_text(
                shrunk,
                self.app,
                self.guarantee,
                dict([KINDS[kind]]),
                name=name,
                description=f"{kind.capitalize()} under {len(shrunk.faults)} drawn fault(s): "
                + "; ".join(shrunk.timeline()),
                image=self.image,
                service=self.service,
            )
        )
        found_s = time.monotonic() - self.result.started
        stalled = self._stalls.get(_played(shrunk), []) if kind == "not drained" else []
        self.result.findings.append(Finding(kind, drawn, shrunk, path, found_s, cut_short, stalled))
        short = f" (shrinking stopped: {cut_short})" if cut_short else ""
        self.progress(
            f"finding: {kind} under {len(shrunk.faults)} fault(s){short}, written to {path}"
        )


def _played(schedule: Schedule) -> tuple[str, tuple[str, ...]]:
    """A schedule as played: its name and its faults' timeline (a shrunk one keeps the name)."""
    return schedule.name, tuple(schedule.timeline())
