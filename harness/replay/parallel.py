"""Runs side by side: each incident and profile replayed by its own ``kafka-replay run`` process.

A process per run keeps runs apart the way separate CI jobs would (own brokers, own Spark,
own signal handling), so a run behaves the same alone or beside others, and Ctrl-C reaches
each of them through the path that already cleans a single run up. One run per process
(rather than both profiles of an incident in one) lets the scheduler pack the long runs
first: the catalog's longest incident alone is a quarter of its total time.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.paths import cache_root
from harness.cluster.process import spawn
from harness.cluster.reaper import Lease

from .runner import Outcome

POLL_S = 0.2
STOP_GRACE_S = 60.0
DURATIONS_FILE = "durations.json"


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


@dataclass
class Worker:
    """One incident's process: its arguments, where it reports, its log."""

    incident: str
    argv: list[str]
    report_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, lease: Lease) -> None:
        """Start it in its own session, dying with this process (SIGKILL included)."""
        self.report_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = spawn([*self.argv, "--report", str(self.report_dir)], log, lease)

    def outcomes(self) -> list[Outcome]:
        """What it reported, or an error naming its exit and last output when it reported none."""
        report = self.report_dir / "report.json"
        if report.exists():
            runs = json.loads(report.read_text())["runs"]
            return [Outcome(**{k: v for k, v in run.items() if k != "gate"}) for run in runs]
        code = self.process.returncode if self.process else None
        tail = self.log_path.read_text(errors="replace").strip().splitlines()[-5:]
        raise WorkerFailed(
            f"the process replaying {self.incident} exited with code {code} without a report; "
            f"its last output: {' | '.join(tail) or '(none)'} (log: {self.log_path})"
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


class WorkerFailed(RuntimeError):
    """A worker process ended without writing its report."""


def worker_argv(incident: str, options: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "run", incident, *options]


def run_side_by_side(
    incidents: Sequence[str],
    options: Sequence[str],
    profiles: Sequence[str],
    jobs: int,
    scratch: Path,
    on_start: Callable[[str], None] = lambda name: None,
    on_done: Callable[[str, list[Outcome]], None] = lambda name, outcomes: None,
) -> list[Outcome]:
    """Replay each incident under each of ``profiles`` in its own process, ``jobs`` at a time.

    ``options`` are the ``kafka-replay run`` options every process gets. Runs start longest
    first (as long as they took last time, see :func:`longest_first`); outcomes come back in
    the order of ``incidents``, then ``profiles``. ``on_start`` and ``on_done`` get a run's
    name, ``incident (profile)``. A process that ends without a report raises
    :class:`WorkerFailed` once the others are done.
    """
    runs = [(incident, profile) for incident in incidents for profile in profiles]
    waiting = deque(
        Worker(
            f"{incident} ({profile})",
            worker_argv(incident, [*options, "--profile", profile]),
            scratch / f"{incident}-{profile}",
            scratch / f"{incident}-{profile}.log",
        )
        for incident, profile in longest_first(runs)
    )
    running: list[Worker] = []
    results: dict[str, list[Outcome]] = {}
    failures: list[WorkerFailed] = []
    lease = Lease.take()
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                worker = waiting.popleft()
                worker.start(lease)
                running.append(worker)
                on_start(worker.incident)
            for worker in [w for w in running if w.process and w.process.poll() is not None]:
                running.remove(worker)
                try:
                    results[worker.incident] = worker.outcomes()
                except WorkerFailed as exc:
                    failures.append(exc)
                    continue
                on_done(worker.incident, results[worker.incident])
            time.sleep(POLL_S)
    finally:
        for worker in running:
            worker.stop()
        lease.release()
    if failures:
        raise WorkerFailed("; ".join(str(f) for f in failures))
    return [outcome for run in runs for outcome in results[f"{run[0]} ({run[1]})"]]
