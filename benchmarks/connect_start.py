"""A Kafka Connect worker's start as the app: first use, then warm, and its memory.

Each run starts ``python -m kafka_replay.apps.connect_worker`` (the command a team gives) with a
file sink connector (Kafka's own ``connect-file``, one jar) on one embedded broker holding 100
records, and times its start to two points: the connector submitted (the worker's REST API
answered and took it), and the 100th record written by the sink (its task assigned, its
consumer caught up). The worker JVM's peak resident memory (``VmHWM``) is read then. The first
run starts with the worker's and the plugin's cache entries removed (resolved again by Maven
from its local repository; a new machine also downloads them); the others are warm, and their
median is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from confluent_kafka import Producer

from benchmarks.broker_start import peak_rss_mib
from kafka_replay.cluster import EmbeddedCluster, choose_version
from kafka_replay.servers.paths import cache_root

#: Kafka's own file sink, the smallest connector on Maven Central (one jar): its 4.4.0 is not
#: served, and 4.3.1's uses a class of Kafka's that 4.4.0 no longer has, so the worker is 4.3.1.
CONNECT = "4.3.1"
FILE_SINK = f"org.apache.kafka:connect-file:{CONNECT}"
RECORDS = 100


def run(args: argparse.Namespace) -> None:
    version = choose_version(args.kafka_version)
    work = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-connect-"))
    try:
        with EmbeddedCluster(version, work_dir=work / "kafka") as cluster:
            topic = cluster.create_topic("connect-bench", 1)
            producer = Producer(cluster.client_config())
            for n in range(RECORDS):
                producer.produce(topic, f"record-{n}".encode())
            assert producer.flush(30) == 0
            for name in (
                f"connect-{CONNECT}",
                f"connect-plugin-org.apache.kafka_connect-file_{CONNECT}",
            ):
                shutil.rmtree(cache_root() / "artifacts" / name, ignore_errors=True)
            runs = [
                one_run(cluster.client_bootstrap_servers, topic, work / f"run-{n}")
                for n in range(args.runs + 1)
            ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first, warm = runs[0], runs[1:]
    print(f"\nConnect worker start (Connect {CONNECT}, file sink, {RECORDS} records)")
    print(
        f"  first use: connector submitted {first[0]:.1f} s, {RECORDS} records written "
        f"{first[1]:.1f} s"
    )
    print_warm(
        warm,
        ("start -> connector submitted", "s"),
        (f"start -> {RECORDS} records written", "s"),
        ("worker peak RSS (VmHWM)", " MiB"),
    )


def print_warm(warm: list[tuple[float, ...]], *columns: tuple[str, str]) -> None:
    """Each column of the warm runs' results, ``(label, unit)``: its median, min and max."""
    for index, (label, unit) in enumerate(columns):
        values = [result[index] for result in warm]
        print(f"  warm, {label}: median {statistics.median(values):.1f}{unit} "
              f"(min {min(values):.1f}, max {max(values):.1f}; {len(values)} runs)")  # fmt: skip


def file_sink_connector(path: Path, sink: Path) -> Path:
    """A file sink writing each record of the contract's input topic as a line of ``sink``."""
    path.write_text(json.dumps({"name": "file-sink", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1", "topics": "{input_topic}", "file": str(sink),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"}}))  # fmt: skip
    return path


def one_run(bootstrap: str, topic: str, work: Path) -> tuple[float, float, float]:
    """Seconds to the connector submitted and to every record written, and the worker's peak
    MiB."""
    work.mkdir(parents=True)
    sink = work / "sink.txt"
    connector = file_sink_connector(work / "file-sink.json", sink)
    (work / "client.properties").write_text("")
    env = {
        **os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "REPLAY_INPUT_TOPIC": topic,
        "REPLAY_OUTPUT_TOPIC": "", "REPLAY_GROUP_ID": f"bench-{work.name}-{time.time_ns()}",
        "REPLAY_CLIENT_PROPERTIES": str(work / "client.properties"),
    }  # fmt: skip
    command = [sys.executable, "-m", "kafka_replay.apps.connect_worker", str(connector),
               "--plugin", FILE_SINK, "--version", CONNECT]  # fmt: skip
    started = time.monotonic()
    with (work / "worker.log").open("wb") as log:
        instance = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
    try:
        worker_log = work / "worker.log"
        answered = wait_until(lambda: b"submitted to the worker" in worker_log.read_bytes(),
                              instance, started)  # fmt: skip
        written = wait_until(lambda: sink.exists() and len(sink.read_bytes().splitlines())
                             >= RECORDS, instance, started)  # fmt: skip
        (worker,) = psutil.Process(instance.pid).children()
        peak = peak_rss_mib(worker.pid)
    finally:
        os.killpg(instance.pid, signal.SIGKILL)
        instance.wait(30)
    return answered, written, peak


def wait_until(
    done: Callable[[], bool],
    instance: subprocess.Popen[bytes],
    started: float,
    timeout: float = 600,
) -> float:
    while not done():
        if instance.poll() is not None:
            raise RuntimeError(f"the worker's instance exited with {instance.returncode}")
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"not done within {timeout:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - started
