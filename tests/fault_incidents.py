"""A small incident for the fault tests: an app forwarding a stream while steps of a test's own
choosing act on the cluster, written as a team would write it and replayed through the engine.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from kafka_replay.cluster import Cluster, ClusterNeeds
from kafka_replay.cluster.pool import ClusterPool, ClusterSpec
from kafka_replay.definitions.definition import load_incident
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.runner import run_incident
from kafka_replay.report.outcome import Outcome

INCIDENT = """\
name = "{name}"
title = "{title}"
post = "ours"
guarantee = "at-least-once"
seed = 5
time_scale = "{count} records at 100 a second while the steps act on the cluster"
{brokers}

[topics]
input = 2
output = 2

[broker]
"min.insync.replicas" = 2

[app]
command = "{{python}} -m kafka_replay_incidents.apps.batch_forwarder"

[workloads.stream]
generator = "student_onboarding"
count = {count}
students = 40
rate = 100.0

[[steps]]
do = "start_apps"

[[steps]]
do = "produce"
workload = "stream"
background = true

{steps}

[[steps]]
do = "drain"
budget_s = 90

[signature]
backlog_drained = "== false"

[profiles.vulnerable]
description = "v"

[profiles.remediated]
description = "r"
"""


def write_incident(
    directory: Path,
    name: str,
    steps: list[str],
    title: str = "faults under a running app",
    brokers: str = "brokers = 3",
    count: int = 400,
) -> Path:
    """``name.toml`` whose steps, after the app and the workload start (steps 0 and 1), are
    ``steps`` (each the body of one ``[[steps]]`` table), then a drain."""
    body = "\n\n".join(f"[[steps]]\n{step}" for step in steps)
    path = directory / f"{name}.toml"
    path.write_text(
        INCIDENT.format(name=name, title=title, brokers=brokers, count=count, steps=body)
    )
    return path


def replay_on_pool(
    definition: Path, pool: ClusterPool, spark: SparkSession, run_dir: Path
) -> tuple[Outcome, list[ClusterSpec]]:
    """Replay the vulnerable profile on the pool's clusters; the outcome and the clusters the
    engine asked for."""
    asked: list[ClusterSpec] = []

    def cluster_for(needs: ClusterNeeds) -> Cluster:
        asked.append(ClusterSpec.needed(None, None, needs))
        return pool.get(asked[-1])

    outcome = run_incident(
        load_incident(definition),
        "vulnerable",
        cluster_for=cluster_for,
        spark=lambda: spark,
        run_dir=run_dir,
        options=RunOptions(),
    )
    return outcome, asked
