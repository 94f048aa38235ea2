"""Runs side by side: ``--jobs N`` lanes, each a ``kafka-replay run --lane`` process.

A lane replays the runs it is given one after another, as ``kafka-replay run`` without
``--jobs`` does: processes keep lanes apart (own brokers, own Spark, own signal handling), and
Ctrl-C reaches each through the path that already cleans a single run up. Runs, rather than
incidents, are given out, longest first, each to the first lane free: the catalog's longest
incident alone is a quarter of its total time. A lane rather than a process per run, because
each process started its own Spark driver, whose first check, beside two others on two cores,
took about 24 s. A lane concludes one run (its check) while the next one's steps run, so it
holds two runs at most: it is given the next when its last one's steps are over.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from kafka_replay.report.outcome import Outcome
from kafka_replay.servers.paths import cache_root
from kafka_replay.servers.process import spawn
from kafka_replay.servers.reaper import Lease

POLL_S = 0.2
STOP_GRACE_S = 60.0
DURATIONS_FILE = "durations.json"
OUTCOME = "outcome.json"
#: The file a lane leaves in a run's directory when it can take another run: the run's steps
#: are over and the run before it is concluded (see :mod:`kafka_replay.playing.lane`).
PLAYED = "played"
#: ``0``: a lane concludes each run before the next one plays, and starts Spark at its first
#: check, as lanes did before (the ``lanes`` benchmark compares).
OVERLAP_ENV = "KAFKA_REPLAY_LANE_OVERLAP"


def durations_file() -> Path:
    return cache_root() / DURATIONS_FILE


def _known() -> dict[str, float]:
    try:
        return dict(json.loads(durations_file().read_text()))
    except (OSError, ValueError):
        return {}


Run = tuple[str, str]  # (incident, profile)


def longest_first(runs: Sequence[Run]) -> list[Run]:
    """The runs ordered by how long they took last time, longest first.

    Starting the longest ones first keeps the last process from running alone at the end;
    runs never timed before keep their order, after the known ones.
    """
    known = _known()
    return sorted(runs, key=lambda run: -known.get(f"{run[0]} {run[1]}", 0.0))


def remember_durations(outcomes: Sequence[Outcome]) -> None:
    """Keep each run's time for the next :func:`longest_first` (a cache; never raises)."""
    times = {f"{o.incident} {o.profile}": o.duration_s for o in outcomes if not o.error}
    with contextlib.suppress(OSError):
        durations_file().write_text(json.dumps({**_known(), **times}, indent=1, sort_keys=True))


class Child:
    """A ``kafka-replay run`` process of ours: its arguments, its log, how it fails and stops."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.argv, self.log_path = argv, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def failed(self, what: str) -> WorkerFailed:
        """The error for a process that ended without ``what``: its exit and last output."""
        code = self.process.returncode if self.process else None
        tail = self.log_path.read_text(errors="replace").strip().splitlines()[-5:]
        return WorkerFailed(
            f"the process replaying {what} exited with code {code} without a report; its last "
            f"output: {' | '.join(tail) or '(none)'} (log: {self.log_path})"
        )

    def stop(self) -> None:
        """Ask it to stop like Ctrl-C would (SIGTERM: it stops its brokers), then insist."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Worker(Child):
    """A process that replays and reports on its own (one side of ``kafka-replay compare``)."""

    def __init__(self, name: str, argv: list[str], report_dir: Path, log_path: Path) -> None:
        super().__init__(argv, log_path)
        self.name, self.report_dir = name, report_dir

    def start(self, lease: Lease) -> None:
        """Start it in its own session, dying with this process (SIGKILL included)."""
        self.report_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = spawn([*self.argv, "--report", str(self.report_dir)], log, lease)

    def outcomes(self) -> list[Outcome]:
        """What it reported, or an error naming its exit and last output when it reported none."""
        report = self.report_dir / "report.json"
        if report.exists():
            return [Outcome.from_json(run) for run in json.loads(report.read_text())["runs"]]
        raise self.failed(self.name)


class Lane(Child):
    """One ``kafka-replay run --lane`` process: it replays the runs it is given, keeping its
    brokers and its Spark session between them, and concludes each beside the next one's
    steps (:mod:`kafka_replay.playing.lane`): it holds two runs at most."""

    def __init__(
        self, argv: list[str], log_path: Path, runs_dir: Path, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(argv, log_path)
        self.runs_dir = runs_dir
        self.env = env  # None: this process's
        self.given: list[Run] = []  # given, their outcome not back yet; the last one newest

    def start(self, lease: Lease) -> None:
        """Start it in its own session, dying with this process (SIGKILL included)."""
        with open(self.log_path, "ab") as log:
            self.process = spawn(self.argv, log, lease, env=self.env, stdin=subprocess.PIPE)

    def _dir(self, run: Run) -> Path:
        return self.runs_dir / f"{run[0]}-{run[1]}"

    def give(self, run: Run) -> None:
        """Replay ``run`` next; its ``outcome.json`` says when it is done."""
        assert self.process is not None and self.process.stdin is not None
        for said in (OUTCOME, PLAYED):  # a report directory used before
            (self._dir(run) / said).unlink(missing_ok=True)
        self.given.append(run)
        self.process.stdin.write(f"{run[0]} {run[1]}\n".encode())
        self.process.stdin.flush()

    def ready(self) -> bool:
        """Whether it can take a run: its last one's steps are over, the one before concluded."""
        return not self.given or (
            len(self.given) == 1 and (self._dir(self.given[0]) / PLAYED).exists()
        )

    def outcomes(self) -> list[tuple[Run, Outcome]]:
        """The outcomes written since last asked; WorkerFailed, naming the runs it held, if the
        lane died before writing theirs."""
        assert self.process is not None
        exited = self.process.poll() is not None  # before looking: what it wrote last counts
        done = []
        for run in list(self.given):
            written = self._dir(run) / OUTCOME
            if written.exists():
                (self._dir(run) / PLAYED).unlink(missing_ok=True)  # said what it had to
                self.given.remove(run)
                done.append((run, Outcome.from_json(json.loads(written.read_text()))))
        if exited and self.given:
            raise self.failed(", ".join(map(name, self.given)))
        return done

    def finish(self) -> None:
        """No more runs: stdin ends, and the lane stops its brokers and Spark and exits."""
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()


class WorkerFailed(RuntimeError):
    """A process of ours ended without writing its outcome or report."""


def name(run: Run | None) -> str:
    return f"{run[0]} ({run[1]})" if run else "(nothing)"


def lane_argv(options: Sequence[str], runs_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kafka_replay.cli",
        "run",
        "--lane",
        *options,
        "--runs-dir",
        str(runs_dir),
    ]


def run_side_by_side(
    incidents: Sequence[str],
    options: Sequence[str],
    profiles: Sequence[str],
    jobs: int,
    scratch: Path,
    on_start: Callable[[str], None] = lambda name: None,
    on_done: Callable[[str, list[Outcome]], None] = lambda name, outcomes: None,
    runs_dir: Path | None = None,
    only: Collection[Run] | None = None,
) -> list[Outcome]:
    """Replay each incident under each of ``profiles`` (those of them in ``only``, when given:
    a shard's), ``jobs`` at a time, in ``jobs`` lanes.

    A lane is a ``kafka-replay run --lane`` process given one run after another. It keeps its
    clusters (a run with the same broker config finds an earlier run's brokers restored, one
    with another starts its own) and one Spark session, started and warmed up while its first
    run plays, and it checks each run while the next one plays (:mod:`.lane`). ``options``
    are the ``kafka-replay run`` options every lane gets; each run's history goes to
    ``runs_dir`` (default: ``scratch/runs``). Runs are given out longest first (as long as
    they took last time, see :func:`longest_first`), each to the first lane ready for one;
    outcomes come back in the order of ``incidents``, then ``profiles``. ``on_start`` and
    ``on_done`` get a run's name, ``incident (profile)``. A lane that dies fails the runs it
    held (:class:`WorkerFailed`, raised once the others are done) and a new lane takes the
    runs still waiting.
    """
    runs_dir = runs_dir or scratch / "runs"
    runs = [(incident, profile) for incident in incidents for profile in profiles]
    runs = [run for run in runs if only is None or run in only]
    waiting = deque(longest_first(runs))
    lanes: list[Lane] = []  # those still replaying
    every_lane: list[Lane] = []
    started = itertools.count()
    results: dict[Run, Outcome] = {}
    failures: list[WorkerFailed] = []
    lease = Lease.take()

    def new_lane() -> None:
        lane = Lane(lane_argv(options, runs_dir), scratch / f"lane-{next(started)}.log", runs_dir)
        lane.start(lease)
        lanes.append(lane)
        every_lane.append(lane)
        give(lane)

    def give(lane: Lane) -> None:
        run = waiting.popleft()
        lane.give(run)
        on_start(name(run))

    try:
        for _ in range(min(jobs, len(runs))):
            new_lane()
        while lanes:
            for lane in list(lanes):
                try:
                    done = lane.outcomes()
                except WorkerFailed as exc:  # the runs it would have had go to a new lane
                    failures.append(exc)
                    lanes.remove(lane)
                    if waiting:
                        new_lane()
                    continue
                for run, outcome in done:
                    results[run] = outcome
                    on_done(name(run), [outcome])
                if waiting:
                    if lane.ready():
                        give(lane)
                elif not lane.given:  # all it was given is concluded
                    lane.finish()
                    lanes.remove(lane)
            time.sleep(POLL_S)
    finally:
        for lane in every_lane:
            lane.finish()
            lane.stop()
        lease.release()
    if failures:
        raise WorkerFailed("; ".join(str(f) for f in failures))
    return [results[run] for run in runs]
