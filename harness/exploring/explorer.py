"""The exploration itself: draw a schedule, play it against the team's service, and when its
guarantee breaks, confirm it, check that the reference service survives it, shrink it and
write it down.

Every play is a real run of the engine (brokers, the app as processes, the checker on Spark),
one after another in one session, so brokers and Spark stay warm between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_replay.definitions.definition import load_incident
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.session import CatalogSession
from kafka_replay.report.outcome import Outcome

from .families import Family
from .schedule import RECORDS, Fault, Schedule, definition_text, draw, simpler_faults
from .shrinking import shrink

#: What breaks a service, the worst first, with the symptom that says so in a definition.
KINDS: dict[str, tuple[str, str]] = {
    "lost": ("inputs_lost", ">= 1"),
    "duplicated": ("reprocessed", ">= 1"),
    "reordered": ("reordered", ">= 1"),
    "not drained": ("backlog_drained", "== false"),
    "crash loop": ("crash_loops", ">= 1"),
}
#: A finding must come back in this many of its plays.
CONFIRM_PLAYS, CONFIRM_NEEDED = 3, 2
#: Plays of the service in a row that could not be played before the exploration gives up:
#: a service that does not start, or a cluster that does not serve, would spend the budget.
ERRORS_IN_A_ROW = 3


class ExploreError(ValueError):
    """The exploration cannot go on (its message is the one ``error:`` line)."""


def kinds_of(outcome: Outcome, guarantee: str, ordered: bool) -> set[str]:
    """What a played run says broke: lost or (under exactly-once) duplicated inputs, results
    out of their keys' order (when order is promised), a backlog never drained, a crash loop."""
    found = set()
    if outcome.anomalies.get("lost", 0) or outcome.anomalies.get("misrouted", 0):
        found.add("lost")
    if guarantee == "exactly-once" and outcome.anomalies.get("duplicate", 0):
        found.add("duplicated")
    if ordered and outcome.anomalies.get("reordered", 0):
        found.add("reordered")
    unseen = ("unseen_at_deadline", "behind_open_transaction")
    if outcome.symptoms.get("backlog_drained") is False or any(
        outcome.anomalies.get(name, 0) for name in unseen
    ):
        found.add("not drained")
    if outcome.symptoms.get("crash_loops"):
        found.add("crash loop")
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
        session: CatalogSession,
        options: RunOptions,
        *,
        app: str,
        guarantee: str,
        families: Sequence[Family],
        seed: int,
        budget_s: float,
        out_dir: Path,
        work_dir: Path,
        ordered: bool = False,
        wanted: int = 1,
        records: int = RECORDS,
        progress: Callable[[str], None] = print,
    ) -> None:
        self.session, self.options, self.app, self.guarantee = session, options, app, guarantee
        self.families, self.budget_s = families, budget_s
        self.ordered, self.wanted, self.records = ordered, wanted, records
        self.out_dir, self.work_dir, self.progress = out_dir, work_dir, progress
        self.result = Exploration(seed)
        self._plays = 0
        self._errors_in_a_row = 0

    def out_of_time(self) -> bool:
        return time.monotonic() - self.result.started >= self.budget_s

    def explore(self) -> Exploration:
        """Draw and play schedules until the budget is spent; the result, as far as it got."""
        while not self.out_of_time() and len(self.result.findings) < self.wanted:
            schedule = draw(self.result.seed, self.result.schedules, self.families, self.records)
            self.result.schedules += 1
            self.progress(f"schedule {schedule.index}: " + "; ".join(schedule.timeline()))
            found = self.play(schedule, "vulnerable")
            if not found:
                continue
            kind = next(k for k in KINDS if k in found)
            if not self.confirmed(schedule, kind, already=1):
                self.result.unconfirmed.append(schedule.name)
                self.progress(f"  {kind} did not come back: not kept")
                continue
            if self.reference_breaks(schedule):
                self.result.apart.append(schedule.name)
                continue
            self.progress(f"  {kind}, confirmed; shrinking {len(schedule.faults)} fault(s)")
            smallest = [schedule]  # the smallest confirmed so far: kept on Ctrl-C as well
            try:
                self._keep(kind, schedule, self._shrunk(kind, schedule, smallest))
            except KeyboardInterrupt:
                self._keep(kind, schedule, smallest[-1])
                raise
        return self.result

    def play(self, schedule: Schedule, profile: str, kind: str | None = None) -> set[str]:
        """One real run of ``schedule``; what broke (nothing when the run itself failed)."""
        self._plays += 1
        name = f"{schedule.name}-play-{self._plays}"
        path = self.work_dir / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        # every kind's symptom named, so that each is measured; only ``kind``'s when confirming
        signature = dict([KINDS[kind]]) if kind else dict(KINDS.values())
        path.write_text(definition_text(schedule, self.app, self.guarantee, signature, name=name))
        incident = load_incident(path)
        started = time.monotonic()
        outcome = self.session.run(incident, profile, self.options)
        found = set() if outcome.error else kinds_of(outcome, self.guarantee, self.ordered)
        service = "yours" if profile == "vulnerable" else "reference"
        self.result.tried.append(
            Tried(schedule.name, len(schedule.faults), service, sorted(found), outcome.error,
                  round(time.monotonic() - started, 1))
        )  # fmt: skip
        said = ", ".join(sorted(found)) or (f"did not play: {outcome.error}" if outcome.error
                                             else f"{self.guarantee} held")  # fmt: skip
        stages = ", ".join(f"{stage} {s:.0f} s" for stage, s in outcome.stage_s.items() if s >= 1)
        self.progress(f"  {service}: {said} ({time.monotonic() - started:.0f} s: {stages})")
        self._give_up_after(service, outcome.error)
        return found

    def _give_up_after(self, service: str, error: str | None) -> None:
        if service != "yours":
            return
        self._errors_in_a_row = self._errors_in_a_row + 1 if error else 0
        if self._errors_in_a_row >= ERRORS_IN_A_ROW:
            raise ExploreError(
                f"your service could not be played {ERRORS_IN_A_ROW} times in a row; the last "
                f"time: {error}"
            )

    def confirmed(
        self, schedule: Schedule, kind: str, already: int = 0, eager: bool = False
    ) -> bool:
        """Whether ``kind`` comes back in 2 of 3 plays (``already``: plays that showed it).

        ``eager``: a first play without it rejects the schedule (a shrinking candidate: a
        smaller finding missed costs less than a play).
        """
        hits, plays = already, already
        while plays < CONFIRM_PLAYS:
            if hits >= CONFIRM_NEEDED or hits + CONFIRM_PLAYS - plays < CONFIRM_NEEDED:
                break
            hits += kind in self.play(schedule, "vulnerable", kind)
            plays += 1
            if eager and plays == 1 and not hits:
                break
        return hits >= CONFIRM_NEEDED

    def reference_breaks(self, schedule: Schedule) -> bool:
        """Whether the catalog's correct service for the guarantee breaks under ``schedule``."""
        found = self.play(schedule, "remediated")
        if found:
            self.progress(f"  the reference service broke too ({', '.join(sorted(found))}): "
                          "the schedule, not the service; reported apart")  # fmt: skip
        return bool(found)

    def _shrunk(self, kind: str, schedule: Schedule, smallest: list[Schedule]) -> Schedule:
        def still_fails(faults: tuple[Fault, ...]) -> bool:
            candidate = replace(schedule, faults=faults)
            self.progress("  trying " + ("; ".join(candidate.timeline()) or "no fault"))
            if self.confirmed(candidate, kind, eager=True):
                smallest.append(candidate)
                return True
            return False

        def simpler(fault: Fault) -> Iterator[Fault]:
            return simpler_faults(fault, schedule.shape.records)

        faults = shrink(schedule.faults, still_fails, simpler, self.out_of_time)
        shrunk = replace(schedule, faults=faults)
        if faults != schedule.faults and self.reference_breaks(shrunk):
            return schedule
        return shrunk

    def _keep(self, kind: str, drawn: Schedule, shrunk: Schedule) -> None:
        name = f"{kind.replace(' ', '-')}-{drawn.seed}-{drawn.index}"
        path = self.out_dir / f"{name}.toml"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(
            definition_text(
                shrunk, self.app, self.guarantee, dict([KINDS[kind]]), name=name,
                description=f"{kind.capitalize()} under {len(shrunk.faults)} drawn fault(s): "
                + "; ".join(shrunk.timeline()),
            )
        )  # fmt: skip
        found_s = time.monotonic() - self.result.started
        self.result.findings.append(Finding(kind, drawn, shrunk, path, found_s))
        self.progress(f"finding: {kind} under {len(shrunk.faults)} fault(s), written to {path}")
