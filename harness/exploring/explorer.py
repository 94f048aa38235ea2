"""The exploration itself: draw a schedule, play it against the team's service, and when its
guarantee breaks, confirm it, check that the reference service survives it, shrink it and
write it down.

Every play is a real run of the engine (brokers, the app as processes, the checker on Spark),
given to a player (:mod:`.players`): one after another in this process, or side by side in
lanes, each keeping its brokers and Spark warm between plays.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.playing.shards import Shard
from kafka_replay.report.outcome import Outcome

from .aiming import Aiming
from .families import Family
from .kinds import KINDS, kinds_of
from .players import Player
from .schedule import (
    RECORDS,
    Fault,
    Schedule,
    definition_text,
    draw,
    simpler_faults,
)
from .shape import ServiceShape
from .shrinking import shrink
from .stalls import stall_account
from .windows import read_windows

#: A finding is written only when its schedule broke the service in every one of this many
#: plays: one that breaks it less often is reported as intermittent, with its rate, never
#: handed over as a test that passes by chance.
REPLAYS = 5
#: A smaller schedule tried while shrinking must break the service in each of this many plays
#: (the first miss rejects it); the one shrinking ends with is played up to ``REPLAYS``.
CANDIDATE_PLAYS = 2
#: How schedules are found: aimed at the windows of exposure of a first play without faults,
#: then drawn at random (``aimed``); or drawn at random from the start.
SEARCHES = ("aimed", "random")
#: The reference service must hold in every one of this many plays of a finding's schedule
#: (side by side with ``--jobs 2``): played once, it once held by chance under a schedule that
#: stalls it one play in two, and the correct service was "found" stalling.
REFERENCE_PLAYS = 2
#: The service's first plays that could not be played before the exploration gives up: a
#: service that does not start, or a cluster that does not serve, would spend the budget.
ERRORS_IN_A_ROW = 3


#: Every schedule of the seed (no ``--shard``).
WHOLE = Shard(1, 1)


class ExploreError(ValueError):
    """The exploration cannot go on (its message is the one ``error:`` line)."""


@dataclass
class Tried:
    """One play: which schedule, against which service, and what it found."""

    schedule: str
    faults: int
    service: str
    kinds: list[str]
    error: str | None
    seconds: float
    #: The kind of window of exposure its faults were aimed at; empty: drawn at random.
    aim: str = ""
    #: Seconds from the exploration's start until it ended.
    at_s: float = 0.0


@dataclass
class Intermittent:
    """A schedule that broke the service in some of its plays, not all: reported, not written."""

    schedule: str
    kind: str
    broke: int
    plays: int
    timeline: list[str]
    #: The timeline of the schedule aimed at the window its break showed, where that one broke
    #: the service in every play (and was written in its place).
    explained: list[str] = field(default_factory=list)


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
    #: In how many of ``REPLAYS`` plays ``drawn`` broke the service: fewer when the fault aimed
    #: at the window its break showed was what broke it every time.
    drawn_broke: int = REPLAYS


@dataclass
class Exploration:
    """What an exploration tried and found, kept as it goes (Ctrl-C keeps what was found)."""

    seed: int
    tried: list[Tried] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: Schedules that broke the service in fewer than ``REPLAYS`` of their plays.
    intermittent: list[Intermittent] = field(default_factory=list)
    #: How the schedules were found (``SEARCHES``), and the windows of exposure of the first
    #: play without faults, by kind (aimed search).
    search: str = "aimed"
    windows: dict[str, int] = field(default_factory=dict)
    #: Schedules the reference service did not survive either: Kafka's or the harness's.
    apart: list[str] = field(default_factory=list)
    #: The corpus's definitions (earlier findings) played first, each with what its play said;
    #: and those that still reproduce.
    corpus: list[tuple[Path, str]] = field(default_factory=list)
    regressions: list[Path] = field(default_factory=list)
    schedules: int = 0
    #: The part of the seed's schedules played (``--shard K/N``; ``1/1``: all of them).
    shard: str = "1/1"
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
        search: str = "aimed",
        corpus: Path | None = None,
        shard: Shard = WHOLE,
        progress: Callable[[str], None] = print,
    ) -> None:
        if search not in SEARCHES:
            raise ExploreError(f"--search is one of {', '.join(SEARCHES)}, got {search!r}")
        self.player, self.app, self.guarantee, self.image = player, app, guarantee, image
        self.service = service
        self.families, self.budget_s = families, budget_s
        self.ordered, self.wanted, self.records = ordered, wanted, records
        self.out_dir, self.work_dir, self.progress = out_dir, work_dir, progress
        self.corpus, self.shard = corpus, shard
        self.result = Exploration(seed, search=search, shard=str(shard))
        #: Aimed schedules still to play (aimed search), made from the first play's windows
        #: and then from windows of kinds a later play showed first; how many of each kind.
        self._aimed: list[Schedule] | None = [] if search == "random" else None
        self.aiming = Aiming(families, guarantee, records)
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
        """Play schedules until the budget is spent; the result, as far as it got.

        Aimed search plays the workload without faults first and aims a schedule at each of
        its windows of exposure; those are played first, then schedules drawn at random. As
        many are played at a time as the player plays side by side. The corpus's definitions,
        if any, are played before all."""
        if self.corpus is not None:
            self.replay_corpus(self.corpus)
        while not self.out_of_time() and len(self.result.findings) < self.wanted:
            if self._aimed is None:
                self._aimed = self._aim()
                continue
            drawn = [self._next() for _ in range(self.player.jobs)]
            found = self._play_outcomes([(schedule, "vulnerable", None) for schedule in drawn])
            for schedule, (kinds, outcome) in zip(drawn, found, strict=True):
                if kinds and len(self.result.findings) < self.wanted:
                    self._follow(schedule, next(k for k in KINDS if k in kinds), _evidence(outcome))
                elif not kinds and self._aimed is not None and self.result.search == "aimed":
                    self._steer(schedule, _evidence(outcome))
        return self.result

    def replay_corpus(self, corpus: Path) -> None:
        """Play each definition kept in ``corpus`` (earlier findings) under its vulnerable
        profile: one that reproduces is a regression, the service still breaks under it."""
        kept = sorted(corpus.glob("*.toml"))[self.shard.index - 1 :: self.shard.count]
        if not kept:
            return
        self.progress(f"replaying the {len(kept)} definition(s) kept in {corpus}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        plays = []
        for path in kept:
            try:
                name = load_incident(path).name
            except (DefinitionError, OSError) as exc:
                raise ExploreError(f"--corpus {corpus}: {exc}") from exc
            copy = self.work_dir / f"{name}.toml"  # where a lane reads it, by its name
            copy.write_text(path.read_text())
            plays.append((copy, "vulnerable"))
        for path, outcome in zip(kept, self.player.play(plays), strict=True):
            if outcome.result == "reproduced":
                self.result.regressions.append(path)
                said = "reproduced: your service still breaks under it"
            elif outcome.error:
                said = f"did not play: {outcome.error}"
            else:
                said = f"{outcome.result}: your service held"
            self.result.corpus.append((path, said))
            self.progress(f"  {path.name}: {said}")

    def _aim(self) -> list[Schedule]:
        """Play the workload without faults, and aim a schedule at each window of exposure
        its history shows, of the families drawn from."""
        index = self._new_index()
        drawn = draw(self.result.seed, index, self.families, self.records, self._transactional)
        layout = replace(drawn.layout, brokers=1)  # no aimed fault needs more
        baseline = Schedule(self.result.seed, index, layout, ())
        self.progress(f"schedule {index}: no fault, to find where the service is exposed")
        ((kinds, outcome),) = self._play_outcomes([(baseline, "vulnerable", None)])
        run_dir = _evidence(outcome)
        if kinds:
            self._follow(baseline, next(k for k in KINDS if k in kinds), run_dir)
        found = read_windows(run_dir) if run_dir is not None else []
        self.result.windows = dict(Counter(w.kind for w in found))
        aimed = [
            Schedule(self.result.seed, self._new_index(), layout, (fault,))
            for fault in self.aiming.faults(found, layout)
        ]
        windows = ", ".join(f"{kind} x{n}" for kind, n in self.result.windows.items())
        self.progress(
            f"  windows of exposure: {windows or 'none'}; {len(aimed)} schedule(s) aimed at them"
        )
        return aimed

    def _steer(self, schedule: Schedule, evidence: Path | None) -> None:
        """Aim at what a play that held newly showed: a window of a kind no fault has been
        aimed at yet is aimed at next, over the same faults."""
        faults = self.aiming.new_kind(schedule, evidence) if evidence is not None else None
        if faults is None:
            return
        index = self._new_index()
        steered = Schedule(self.result.seed, index, schedule.layout, faults)
        self._aimed = [*(self._aimed or []), steered]
        aim = faults[-1].aim
        assert aim is not None
        self.progress(f"  {schedule.name} showed {aim.describe()}: schedule {index} aims at it")

    def _explanations(self, schedule: Schedule, kind: str, evidence: Path | None) -> list[Schedule]:
        return self.aiming.explanations(schedule, kind, evidence) if evidence is not None else []

    def _explained(self, schedule: Schedule, kind: str, evidence: Path | None) -> Schedule | None:
        """The first of ``schedule``'s explanations that breaks the service in every one of
        ``REPLAYS`` plays, if one does before the budget runs out."""
        for candidate in self._explanations(schedule, kind, evidence):
            if self.out_of_time():
                return None
            self.progress(
                "  aimed at the window its break showed: " + "; ".join(candidate.timeline())
            )
            if self.breaks_every_time(candidate, kind) and (
                self.replayed(candidate, kind, already=CANDIDATE_PLAYS) == REPLAYS
            ):
                return candidate
        return None

    def _new_index(self) -> int:
        """The next schedule's index: this shard's share of the seed's (``--shard K/N``: K-1,
        K-1+N, ...), so that no two shards play the same schedule or name a finding alike."""
        index = self.result.schedules * self.shard.count + self.shard.index - 1
        self.result.schedules += 1
        return index

    @property
    def _transactional(self) -> bool:
        return self.guarantee == "exactly-once"

    def _next(self) -> Schedule:
        """The next aimed schedule, else one drawn at random."""
        if self._aimed:
            schedule = self._aimed.pop(0)
            self.progress(f"schedule {schedule.index}: " + "; ".join(schedule.timeline()))
            return schedule
        return self._draw()

    def _draw(self) -> Schedule:
        schedule = draw(
            self.result.seed,
            self._new_index(),
            self.families,
            self.records,
            transactional=self._transactional,
        )
        self.progress(f"schedule {schedule.index}: " + "; ".join(schedule.timeline()))
        return schedule

    def _follow(self, schedule: Schedule, kind: str, evidence: Path | None = None) -> None:
        """Replay a schedule that broke the service, check it is fair, shrink and keep it.

        One that broke it in fewer than ``REPLAYS`` plays is replaced by a fault aimed at the
        window its break showed (``evidence``: the breaking play's run directory), when that
        breaks it every time; else it is reported as intermittent."""
        broke = self.replayed(schedule, kind, already=1)
        found = schedule
        if broke < REPLAYS:
            explained = self._explained(schedule, kind, evidence)
            self.result.intermittent.append(
                Intermittent(
                    schedule.name,
                    kind,
                    broke,
                    REPLAYS,
                    schedule.timeline(),
                    explained.timeline() if explained else [],
                )
            )
            if explained is None:
                self.progress(
                    f"  {schedule.name}: {kind} in {broke} of {REPLAYS} plays: intermittent, "
                    "not written"
                )
                return
            self.progress(
                f"  {schedule.name}: {kind} in {broke} of {REPLAYS} plays; the fault aimed at "
                f"the window its break showed: {kind} in {REPLAYS} of {REPLAYS}"
            )
            found = explained
        if self.reference_breaks(found):
            self.result.apart.append(found.name)
            return
        self.progress(
            f"  {kind} in {REPLAYS} of {REPLAYS} plays; shrinking {len(found.faults)} fault(s)"
        )
        cut_short: list[str] = []
        try:
            shrunk = self._shrunk(kind, found, cut_short, evidence)
        except KeyboardInterrupt:
            self._keep(kind, schedule, found, "interrupted", broke)
            raise
        self._keep(kind, schedule, shrunk, cut_short[0] if cut_short else None, broke)

    def play(self, schedule: Schedule, profile: str, kind: str | None = None) -> set[str]:
        """One real run of ``schedule``; what broke (nothing when the run itself failed)."""
        return self.play_all([(schedule, profile, kind)])[0]

    def play_all(self, plays: Sequence[tuple[Schedule, str, str | None]]) -> list[set[str]]:
        """Real runs of each ``(schedule, profile, kind looked for)``, side by side as the
        player can; what broke in each."""
        return [kinds for kinds, _ in self._play_outcomes(plays)]

    def _play_outcomes(
        self, plays: Sequence[tuple[Schedule, str, str | None]]
    ) -> list[tuple[set[str], Outcome]]:
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
                    ", ".join(fault.aim.kind for fault in schedule.faults if fault.aim),
                    round(time.monotonic() - self.result.started, 1),
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
        return list(zip(found_each, outcomes, strict=True))

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

    def replayed(self, schedule: Schedule, kind: str, already: int = 0) -> int:
        """In how many of ``REPLAYS`` plays ``schedule`` breaks the service with ``kind``
        (``already``: plays of it that did), as many at once as the player plays side by side:
        every play is made, so that a schedule that breaks it now and then has its rate."""
        broke, plays = already, already
        while plays < REPLAYS:
            at_once = min(self.player.jobs, REPLAYS - plays)
            found = self.play_all([(schedule, "vulnerable", kind)] * at_once)
            broke, plays = broke + sum(kind in kinds for kinds in found), plays + at_once
        return broke

    def breaks_every_time(self, schedule: Schedule, kind: str) -> bool:
        """Whether ``kind`` comes back in each of ``CANDIDATE_PLAYS`` plays, the first miss
        rejecting the schedule (a shrinking candidate: a smaller finding missed costs less than
        a play)."""
        plays = 0
        while plays < CANDIDATE_PLAYS:
            at_once = min(self.player.jobs, CANDIDATE_PLAYS - plays)
            found = self.play_all([(schedule, "vulnerable", kind)] * at_once)
            if not all(kind in kinds for kinds in found):
                return False
            plays += at_once
        return True

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
        self, kind: str, schedule: Schedule, cut_short: list[str], evidence: Path | None = None
    ) -> Schedule:
        """The smallest schedule that still breaks the service every time it is played: the
        drawn one where none smaller replays ``REPLAYS`` of ``REPLAYS``. Shrinking starts from
        the fault aimed at the window the break showed (``evidence``), where that one breaks
        it: what is written then says where the service is exposed."""
        longest_s = 0.0  # the longest a candidate took: what the next one may take

        def still_fails(faults: tuple[Fault, ...]) -> bool:
            nonlocal longest_s
            candidate = replace(schedule, faults=faults)
            self.progress("  trying " + ("; ".join(candidate.timeline()) or "no fault"))
            began = time.monotonic()
            try:
                return self.breaks_every_time(candidate, kind)
            finally:
                longest_s = max(longest_s, time.monotonic() - began)

        def simpler(fault: Fault) -> Iterator[Fault]:
            return simpler_faults(fault, schedule.layout.records)

        def out_of_time() -> bool:  # before a candidate: one that would end past it is not begun
            if self.out_of_time() or self.would_overrun(longest_s):
                cut_short.append("the budget ran out")
                return True
            return False

        start = schedule.faults
        drawn = any(fault.aim is None for fault in schedule.faults)
        for candidate in self._explanations(schedule, kind, evidence) if drawn else []:
            if out_of_time():
                break
            if still_fails(candidate.faults):
                start = candidate.faults
                break
        faults = shrink(start, still_fails, simpler, out_of_time)
        shrunk = replace(schedule, faults=faults)
        if faults == schedule.faults:
            return schedule
        left = (REPLAYS - CANDIDATE_PLAYS + REFERENCE_PLAYS) / CANDIDATE_PLAYS  # in candidates
        if self.would_overrun(left * longest_s):
            self.progress(f"  no time to play the smaller one {REPLAYS} times: the drawn is kept")
            cut_short[:] = cut_short or ["the budget ran out"]
            return schedule
        broke = self.replayed(shrunk, kind, already=CANDIDATE_PLAYS)
        if broke < REPLAYS:
            self.progress(
                f"  the smaller schedule broke it in {broke} of {REPLAYS} plays: the one drawn "
                "is kept"
            )
            return schedule
        return schedule if self.reference_breaks(shrunk) else shrunk

    def _keep(
        self,
        kind: str,
        drawn: Schedule,
        shrunk: Schedule,
        cut_short: str | None = None,
        drawn_broke: int = REPLAYS,
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
                description=f"{kind.capitalize()} under {len(shrunk.faults)} fault(s), in "
                f"{REPLAYS} of {REPLAYS} plays: " + ("; ".join(shrunk.timeline()) or "none"),
                image=self.image,
                service=self.service,
            )
        )
        found_s = time.monotonic() - self.result.started
        stalled = self._stalls.get(_played(shrunk), []) if kind == "not drained" else []
        self.result.findings.append(
            Finding(kind, drawn, shrunk, path, found_s, cut_short, stalled, drawn_broke)
        )
        short = f" (shrinking stopped: {cut_short})" if cut_short else ""
        self.progress(
            f"finding: {kind} under {len(shrunk.faults)} fault(s){short}, written to {path}"
        )


def _evidence(outcome: Outcome) -> Path | None:
    """The run directory of a play that was played (what its history says)."""
    return Path(outcome.run_dir) if outcome.run_dir and not outcome.error else None


def _played(schedule: Schedule) -> tuple[str, tuple[str, ...]]:
    """A schedule as played: its name and its faults' timeline (a shrunk one keeps the name)."""
    return schedule.name, tuple(schedule.timeline())
