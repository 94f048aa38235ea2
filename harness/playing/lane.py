"""A lane of ``--jobs``: one process that replays the runs named on its stdin, in a pipeline.

A run's steps are bound by the incident's own waits; what follows them (settling, the Spark
check, the judgement) needs only the run's cluster. So a lane concludes one run in a thread
while the next run plays on a cluster of its own (:meth:`ClusterPool.borrow`), and warms its
Spark session up while the first run plays: the checker's time leaves the lane's critical path
wherever a run's steps are longer than the check before it.

It tells the process feeding it (:mod:`kafka_replay.playing.parallel`) two things through each
run's directory: :data:`PLAYED` once the run's steps are over and the run before it is
concluded (it can take the next run), and ``outcome.json`` once the run is concluded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kafka_replay.definitions.model import Incident
from kafka_replay.report.outcome import Outcome

from .parallel import OVERLAP_ENV, PLAYED
from .run_options import RunOptions
from .session import CatalogSession

#: How long a lane told to stop gives the run it was concluding to end.
STOP_GRACE_S = 20.0


class _Concluding:
    """The one run a lane concludes beside the next run's steps.

    A daemon thread: Ctrl-C stops the lane's clusters and Spark, and the process does not wait
    on a check that can no longer finish.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self, work: Callable[[], object]) -> None:
        self.wait()

        def run() -> None:
            try:
                work()
            except BaseException as exc:  # raised in the lane's own thread by wait()
                self._failure = exc

        self._thread = threading.Thread(target=run, name="concluding", daemon=True)
        self._thread.start()

    def abandon(self, grace_s: float) -> None:
        """Give the run under way ``grace_s`` to end (its session stopped under it), so that
        what it cleans up on the way out (temporary files) is cleaned before the lane exits."""
        if self._thread is not None:
            self._thread.join(grace_s)

    def wait(self) -> None:
        """Until the run under way is concluded; its failure, if it had one, raised here."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure


def run_lane(
    session: CatalogSession,
    incidents: Mapping[str, Incident],
    options: RunOptions,
    lines: Iterable[str],
    show: Callable[[Outcome], None],
) -> None:
    """Replay each ``INCIDENT PROFILE`` of ``lines``, concluding each beside the next's steps."""
    overlap = os.environ.get(OVERLAP_ENV) != "0"
    concluding = _Concluding()
    try:
        if overlap:
            concluding.start(session.warm_up)
        for line in lines:
            name, profile = line.split()
            played = session.play(incidents[name], profile, options)
            concluding.wait()  # the run before: its outcome is written before this one's word
            Path(played.history.root, PLAYED).touch()
            concluding.start(lambda played=played: show(session.conclude(played)))
            if not overlap:
                concluding.wait()
        concluding.wait()
    except BaseException:  # Ctrl-C: Spark and the brokers stop, and the check under way with them
        session.close()
        concluding.abandon(STOP_GRACE_S)
        raise
