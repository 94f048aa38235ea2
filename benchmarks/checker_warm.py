"""The check of a real incident run in a lane's warm Spark session, repeated on the same run:
on a Spark driver of the lane's own against a session on the shared Spark Connect server.

A lane starts its Spark session and checks a made-up run while its first run plays
(:meth:`CatalogSession.warm_up`); every check after that is a warm one. This replays catalog
runs (``INCIDENT:PROFILE``, default two) in one session as a lane does, and checks each played
run ``--runs`` + 1 times before judging it: it reports the session's start with its warm-up,
the first check of each run and the median of the others, and asserts that every check of a
run found the same anomalies as its first. Each way is a process of its own (PySpark takes a
whole process to Spark Connect), the two taking turns for ``--times`` rounds; the server is
started once, before the first round, as ``kafka-replay compare`` starts it before its sides.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = ("zombie-commit:remediated", "producer-retry-duplicates:vulnerable")
WAYS = ("own driver", "shared server")


def run(args: argparse.Namespace) -> None:
    from kafka_replay.checker.connect_server import SparkConnectServer
    from kafka_replay.checker.spark import MASTER_ENV, REMOTE_ENV
    from kafka_replay.servers.reaper import Lease

    runs = args.incidents or list(RUNS)
    print(f"\nChecker in a warm session ({args.runs} checks a run after its first, medians)")
    lease = Lease.take()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="bench-warm-") as work,
            SparkConnectServer(Path(work) / "spark-connect.log", lease) as server,
        ):
            env = {k: v for k, v in os.environ.items() if k not in (MASTER_ENV, REMOTE_ENV)}
            found: dict[str, dict[str, list[dict[str, float]]]] = {w: {} for w in WAYS}
            for round_ in range(1, args.times + 1):
                for way in WAYS:
                    given = {REMOTE_ENV: server.url} if way == "shared server" else {}
                    measured = _measure({**env, **given}, runs, args.runs)
                    load = os.getloadavg()[0]
                    for name, times in measured.items():
                        found[way].setdefault(name, []).append(times)
                        print(
                            f"  round {round_}, {way}: {name}: start {times['start']:.1f} s, "
                            f"first {times['first']:.2f} s, then median {times['warm']:.2f} s "
                            f"(load {load:.1f})"
                        )
            _summarise(found)
    finally:
        lease.release()


def _summarise(found: dict[str, dict[str, list[dict[str, float]]]]) -> None:
    """Each run's medians over the rounds, each way, and the shared server's over its own."""
    own, shared = (found[way] for way in WAYS)
    for name in own:
        medians = {
            key: [statistics.median(t[key] for t in found[way][name]) for way in WAYS]
            for key in ("start", "first", "warm")
        }
        said = ", ".join(
            f"{key} {mine:.2f} s against {theirs:.2f} s ({theirs / mine:.2f})"
            for key, (mine, theirs) in medians.items()
        )
        print(f"  {name}, own driver against shared server: {said}")
    assert set(own) == set(shared)


def _measure(env: dict[str, str], runs: list[str], checks: int) -> dict[str, dict[str, float]]:
    """One process's session, each run played once and checked ``checks`` + 1 times."""
    command = [sys.executable, "-m", "benchmarks.checker_warm", str(checks), *runs]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process exited {done.returncode}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _session_checks(checks: int, runs: list[str]) -> dict[str, dict[str, float]]:
    """In this process: a lane's session (its Spark as the environment says), each run played
    once and checked ``checks`` + 1 times, every check finding what the first found."""
    from kafka_replay.replay.catalog import incident_directories, load_incidents
    from kafka_replay.replay.runner import RunOptions
    from kafka_replay.replay.session import CatalogSession

    incidents = load_incidents(tuple(incident_directories()))
    measured = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-warm-") as work,
        CatalogSession(Path(work)) as session,
    ):
        started = time.perf_counter()
        session.warm_up()
        start = time.perf_counter() - started
        for name, profile in (run.split(":") for run in runs):
            played = session.play(incidents[name], profile, RunOptions())
            try:
                if played.stopped:
                    raise RuntimeError(f"{name} [{profile}]: {played.outcome.error}")
                played.settle()
                times, found = [], None
                for _ in range(checks + 1):
                    began = time.perf_counter()
                    played.check(lambda: session.spark)
                    times.append(time.perf_counter() - began)
                    found = found or played.outcome.anomalies
                    assert played.outcome.anomalies == found, (found, played.outcome.anomalies)
                measured[f"{name} [{profile}]"] = {
                    "start": start,
                    "first": times[0],
                    "warm": statistics.median(times[1:]),
                }
            finally:
                played.finish()
                if played.cluster is not None:
                    session.pool.give_back(played.cluster)
    return measured


if __name__ == "__main__":
    print(json.dumps(_session_checks(int(sys.argv[1]), sys.argv[2:])))
