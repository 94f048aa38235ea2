"""Where an exploration's plays run: one after another in this process, or side by side in
lanes (``kafka-replay run --lane`` processes, as ``run --jobs`` uses), kept for the whole
exploration so that each keeps its brokers and its warm Spark between plays."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from kafka_replay.definitions.definition import load_incident
from kafka_replay.playing.parallel import POLL_S, Lane, lane_argv
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.session import CatalogSession
from kafka_replay.report.outcome import Outcome
from kafka_replay.servers.reaper import Lease

#: A play: a definition's file, and the profile to play it under.
Play = tuple[Path, str]


class Player(Protocol):
    jobs: int

    def play(self, plays: Sequence[Play]) -> list[Outcome]:
        """Each play's outcome, in the order given."""
        ...

    def close(self) -> None: ...


class InTurn:
    """Plays one after another in this process's session."""

    jobs = 1

    def __init__(self, session: CatalogSession, options: RunOptions) -> None:
        self.session, self.options = session, options

    def play(self, plays: Sequence[Play]) -> list[Outcome]:
        return [
            self.session.run(load_incident(path), profile, self.options) for path, profile in plays
        ]

    def close(self) -> None:
        self.session.close()


class InLanes:
    """Plays side by side, ``jobs`` lanes given the definitions as they are drawn (each lane
    reads ``NAME.toml`` from the definitions' directory when it is first named)."""

    def __init__(
        self,
        jobs: int,
        options: Sequence[str],
        definitions: Path,
        scratch: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.jobs = jobs
        self.lease = Lease.take()
        runs_dir = scratch / "runs"
        argv = lane_argv([*options, "--incidents", str(definitions)], runs_dir)
        self.lanes = [Lane(argv, scratch / f"lane-{i}.log", runs_dir, env) for i in range(jobs)]
        try:
            for lane in self.lanes:
                lane.start(self.lease)
        except BaseException:
            self.close()
            raise

    def play(self, plays: Sequence[Play]) -> list[Outcome]:
        waiting = deque(enumerate(plays))
        given: dict[tuple[str, str], int] = {}
        done: dict[int, Outcome] = {}
        while len(done) < len(plays):
            for lane in self.lanes:
                for run, outcome in lane.outcomes():  # WorkerFailed if the lane died
                    done[given.pop(run)] = outcome
                if waiting and lane.ready():
                    index, (path, profile) = waiting.popleft()
                    given[(path.stem, profile)] = index
                    lane.give((path.stem, profile))
            time.sleep(POLL_S)
        return [done[index] for index in range(len(plays))]

    def close(self) -> None:
        try:
            for lane in self.lanes:
                lane.finish()
            for lane in self.lanes:
                lane.stop()
        finally:
            self.lease.release()
