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

On a driver of its own each warm check also says what it cost Spark (:func:`probed`): the
stages its jobs ran (from Spark's status store), the calls it made into the JVM, and its time
outside any job (planning the queries, reading the history's small files on the driver).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
                            f"first {times['first']:.2f} s, then median {times['warm']:.2f} s"
                            f"{_cost(times)} (load {load:.1f})"
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
        costs = {
            key: statistics.median(t[key] for t in own[name])
            for key in COSTS
            if key in own[name][0]
        }
        if costs:
            print(f"  {name}, a warm check on its own driver{_cost(costs)}")
    assert set(own) == set(shared)


#: What :func:`probed` measures of a warm check, as printed.
COSTS = {"planning": "{:.2f} s planning", "jvm_calls": "{:.0f} calls into the JVM",
         "jobs": "{:.0f} jobs", "stages": "{:.0f} stages"}  # fmt: skip


def _cost(measured: dict[str, float]) -> str:
    """A warm check's cost to Spark, where it was measured (a driver of its own)."""
    said = [form.format(measured[key]) for key, form in COSTS.items() if key in measured]
    return f": {', '.join(said)}" if said else ""


def _measure(env: dict[str, str], runs: list[str], checks: int) -> dict[str, dict[str, float]]:
    """One process's session, each run played once and checked ``checks`` + 1 times."""
    command = [sys.executable, "-m", "benchmarks.checker_warm", str(checks), *runs]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process exited {done.returncode}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def probed(spark: Any) -> Iterator[dict[str, float]]:
    """What the check run in the block cost Spark, filled in as the block ends: ``stages`` its
    jobs ran (skipped ones not counted), ``jvm_calls`` made from Python and ``planning``, its
    seconds outside every job. Left empty on Spark Connect, whose client has no JVM."""
    cost: dict[str, float] = {}
    if not hasattr(spark, "_jsc"):
        yield cost
        return
    from py4j.java_gateway import GatewayClient

    store = spark.sparkContext._jsc.sc().statusStore()
    before = {job.jobId() for job in _scala(store.jobsList(None))}
    send, calls = GatewayClient.send_command, [0]

    def counted(client: GatewayClient, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return send(client, *args, **kwargs)

    GatewayClient.send_command = counted
    began = time.time()
    try:
        yield cost
    finally:
        GatewayClient.send_command = send
    wall = time.time() - began
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()  # the jobs' ends recorded
    jobs = [job for job in _scala(store.jobsList(None)) if job.jobId() not in before]
    stages = {sid for job in jobs for sid in _scala(job.stageIds())}
    ran = [sid for sid in stages if str(store.lastStageAttempt(sid).status()) != "SKIPPED"]
    spans = sorted(
        (job.submissionTime().get().getTime() / 1000, job.completionTime().get().getTime() / 1000)
        for job in jobs
    )
    in_jobs, reached = 0.0, began
    for start, end in spans:  # the union of the jobs' spans, within the block
        start, end = max(start, reached), min(end, began + wall)
        if end > start:
            in_jobs, reached = in_jobs + end - start, end
    cost.update(stages=len(ran), jobs=len(jobs), jvm_calls=calls[0], planning=wall - in_jobs)


def _scala(seq: Any) -> list[Any]:
    """A Scala ``Seq`` from the JVM as a list."""
    return [seq.apply(i) for i in range(seq.size())]


def _session_checks(checks: int, runs: list[str]) -> dict[str, dict[str, float]]:
    """In this process: a lane's session (its Spark as the environment says), each run played
    once and checked ``checks`` + 1 times, every check finding what the first found."""
    from kafka_replay.definitions.catalog import incident_directories, load_incidents
    from kafka_replay.playing.run_options import RunOptions
    from kafka_replay.playing.session import CatalogSession

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
                times, costs, found = [], [], None
                for _ in range(checks + 1):
                    with probed(session.spark) as cost:
                        began = time.perf_counter()
                        played.check(lambda: session.spark)
                        times.append(time.perf_counter() - began)
                    costs.append(cost)
                    found = found or played.outcome.anomalies
                    assert played.outcome.anomalies == found, (found, played.outcome.anomalies)
                measured[f"{name} [{profile}]"] = {
                    "start": start,
                    "first": times[0],
                    "warm": statistics.median(times[1:]),
                    **{key: statistics.median(c[key] for c in costs[1:]) for key in costs[-1]},
                }
            finally:
                played.finish()
                if played.cluster is not None:
                    session.pool.give_back(played.cluster)
    return measured


if __name__ == "__main__":
    print(json.dumps(_session_checks(int(sys.argv[1]), sys.argv[2:])))
