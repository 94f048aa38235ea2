"""The check of a real incident run in a lane's warm Spark session, repeated on the same run.

A lane starts its Spark session and checks a made-up run while its first run plays
(:meth:`CatalogSession.warm_up`); every check after that is a warm one. This replays catalog
runs (``INCIDENT:PROFILE``, default two) in one session as a lane does, and checks each played
run ``--runs`` + 1 times before judging it: it reports the session's start with its warm-up,
the first check of each run and the median of the others, and asserts that every check of a
run found the same anomalies as its first.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

RUNS = ("zombie-commit:remediated", "producer-retry-duplicates:vulnerable")


def run(args: argparse.Namespace) -> None:
    from kafka_replay.replay.catalog import incident_directories, load_incidents
    from kafka_replay.replay.runner import RunOptions
    from kafka_replay.replay.session import CatalogSession

    incidents = load_incidents(tuple(incident_directories()))
    print(f"\nChecker in a warm session ({args.runs} checks a run after its first, medians)")
    with (
        tempfile.TemporaryDirectory(prefix="bench-warm-") as work,
        CatalogSession(Path(work)) as session,
    ):
        started = time.perf_counter()
        session.warm_up()
        print(f"  the session's start and its warm-up check: {time.perf_counter() - started:.1f} s")
        for name, profile in (run.split(":") for run in args.incidents or RUNS):
            played = session.play(incidents[name], profile, RunOptions())
            try:
                if played.stopped:
                    print(f"  {name} [{profile}]: {played.outcome.error or played.outcome.result}")
                    continue
                played.settle()
                times, found = [], None
                for _ in range(args.runs + 1):
                    began = time.perf_counter()
                    played.check(lambda: session.spark)
                    times.append(time.perf_counter() - began)
                    found = found or played.outcome.anomalies
                    assert played.outcome.anomalies == found, (found, played.outcome.anomalies)
                shown = {a: n for a, n in (found or {}).items() if n}
                later = ", ".join(f"{t:.2f}" for t in times[1:])
                print(
                    f"  {name} [{profile}]: first {times[0]:.2f} s, then median "
                    f"{statistics.median(times[1:]):.2f} s ({later}); "
                    f"found {shown or 'nothing'} every time"
                )
            finally:
                played.finish()
                if played.cluster is not None:
                    session.pool.give_back(played.cluster)
