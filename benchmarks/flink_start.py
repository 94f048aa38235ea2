"""A Flink job's start as the app: first use, then warm, and its memory.

Each run starts ``python -m kafka_replay.apps.flink_job`` with the catalog's reference job
(``ExactlyOnceJob``: a Kafka source, an exactly-once Kafka sink) on one embedded broker holding
100 records, and times its start to two points: its first checkpoint completed (when the
supervisor counts it started), and the 100th record readable by a read_committed reader (the
checkpoint that covers them committed). The job JVM's peak resident memory (``VmHWM``) is read
then. The first run starts with Flink's, the connector's and the compiled job's cache entries
removed (resolved again by Maven from its local repository, compiled again; a new machine also
downloads them); the others are warm, and their median is given.

``flink-session-start`` does the same with ``--cluster session``: a JobManager and a
TaskManager as processes and the job's client beside them, their peak resident memory summed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from confluent_kafka import Consumer, Producer

from benchmarks.broker_start import peak_rss_mib
from benchmarks.connect_start import print_warm, wait_until
from kafka_replay.apps.flink_runtime import FLINK_VERSION, KAFKA_CONNECTOR, reference_job_jar
from kafka_replay.cluster import EmbeddedCluster, choose_version
from kafka_replay.definitions.catalog import catalog_dir
from kafka_replay.servers.paths import cache_root

RECORDS = 100


def run(args: argparse.Namespace, cluster_kind: str = "local") -> None:
    version = choose_version(args.kafka_version)
    work = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-flink-"))
    try:
        with EmbeddedCluster(version, work_dir=work / "kafka") as cluster:
            _forget_flink()
            runs = [one_run(cluster, work / f"run-{n}", cluster_kind) for n in range(args.runs + 1)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first, warm = runs[0], runs[1:]
    print(
        f"\nFlink job start (Flink {FLINK_VERSION}, --cluster {cluster_kind}, the reference "
        f"job, {RECORDS} records)"
    )
    print(
        f"  first use: first checkpoint {first[0]:.1f} s, {RECORDS} records committed "
        f"{first[1]:.1f} s"
    )
    print_warm(
        warm,
        ("start -> first checkpoint", "s"),
        (f"start -> {RECORDS} records committed", "s"),
        (
            "job JVM peak RSS (VmHWM)"
            if cluster_kind == "local"
            else "JVMs' peak RSS, summed (VmHWM)",
            " MiB",
        ),
    )


def run_session(args: argparse.Namespace) -> None:
    run(args, "session")


def _forget_flink() -> None:
    """Remove what a first use resolves and compiles, so the first run pays for it."""
    artifacts = cache_root() / "artifacts"
    shutil.rmtree(artifacts / f"flink-{FLINK_VERSION}", ignore_errors=True)
    connector = "flink-job-" + KAFKA_CONNECTOR.replace(":", "_")
    shutil.rmtree(artifacts / connector, ignore_errors=True)
    for compiled in (cache_root() / "jvm-apps").glob(f"*-flink-{FLINK_VERSION}*"):
        if compiled.is_dir():
            shutil.rmtree(compiled, ignore_errors=True)
        else:
            compiled.unlink(missing_ok=True)


def one_run(cluster: EmbeddedCluster, work: Path, kind: str) -> tuple[float, float, float]:
    """Seconds to the first checkpoint and to every record committed, and the JVMs' peak MiB."""
    work.mkdir(parents=True)
    source = cluster.create_topic("flink-bench-in", 1)
    sink = cluster.create_topic("flink-bench-out", 1)
    producer = Producer(cluster.client_config())
    for n in range(RECORDS):
        producer.produce(source, f"record-{n}".encode())
    assert producer.flush(30) == 0
    (work / "client-0.properties").write_text("")
    env = {
        **os.environ, "KAFKA_BOOTSTRAP_SERVERS": cluster.client_bootstrap_servers,
        "REPLAY_INPUT_TOPIC": source, "REPLAY_OUTPUT_TOPIC": sink,
        "REPLAY_GROUP_ID": f"bench-{work.name}-{time.time_ns()}",
        "REPLAY_TRANSACTIONAL_ID": f"bench-{work.name}",
        "REPLAY_CLIENT_PROPERTIES": str(work / "client-0.properties"),
    }  # fmt: skip
    started = time.monotonic()
    command = [sys.executable, "-m", "kafka_replay.apps.flink_job",
               str(reference_job_jar(catalog_dir())), "--class", "ExactlyOnceJob",
               "--cluster", kind]  # fmt: skip
    log_path = work / "job.log"
    with log_path.open("wb") as log:
        instance = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
    reader = Consumer(cluster.client_config(**{
        "group.id": f"bench-reader-{time.time_ns()}", "auto.offset.reset": "earliest",
        "isolation.level": "read_committed"}))  # fmt: skip
    reader.subscribe([sink])
    copied = []

    def all_copied() -> bool:
        copied.extend(m for m in reader.consume(100, 0.1) if m.error() is None)
        return len(copied) >= RECORDS

    try:
        ready = wait_until(lambda: b"completed its first checkpoint" in log_path.read_bytes(),
                           instance, started)  # fmt: skip
        committed = wait_until(all_copied, instance, started)
        peak = sum(peak_rss_mib(jvm.pid) for jvm in psutil.Process(instance.pid).children())
    finally:
        reader.close()
        os.killpg(instance.pid, signal.SIGKILL)
        instance.wait(30)
    return ready, committed, peak
