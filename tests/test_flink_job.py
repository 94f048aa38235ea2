"""A Flink job as the app: its local cluster on loopback, its checkpoints kept across restarts,
and a kill -9 followed by a restore that loses and repeats nothing."""

from __future__ import annotations

import io
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Message

from kafka_replay.apps import AppContext, AppSpec, Supervisor
from kafka_replay.apps.flink_job import parse, relay
from kafka_replay.apps.flink_runtime import (
    cluster_config,
    newest_checkpoint,
    reference_job_jar,
)
from kafka_replay.cluster import Cluster
from kafka_replay.definitions.catalog import catalog_dir
from kafka_replay.faults import kill_at_random
from kafka_replay.history import RunHistory
from kafka_replay.servers.ports import listening_addresses
from tests.kafka_helpers import consume_until, eventually, new_consumer, produce_acked


def test_the_cluster_listens_on_loopback_keeps_its_checkpoints_and_takes_the_teams_settings(
    tmp_path: Path,
) -> None:
    config = cluster_config(
        tmp_path / "checkpoints", tmp_path / "tmp", {"execution.checkpointing.interval": "5s"}
    )
    hosts = [
        key for key in config if key.endswith(("bind-address", "bind-host", ".address", ".host"))
    ]
    assert len(hosts) == 6 and {config[key] for key in hosts} == {"127.0.0.1"}
    assert config["execution.checkpointing.dir"] == (tmp_path / "checkpoints").as_uri()
    assert config["execution.checkpointing.externalized-checkpoint-retention"] == (
        "RETAIN_ON_CANCELLATION"
    )
    assert config["io.tmp.dirs"] == str(tmp_path / "tmp")  # nothing left in the machine's /tmp
    assert config["restart-strategy.type"] == "none"  # a failed job ends; its supervisor restarts
    assert config["execution.checkpointing.interval"] == "5s"


def test_the_newest_completed_checkpoint_is_restored_from(tmp_path: Path) -> None:
    assert newest_checkpoint(tmp_path) is None
    for job, checkpoint, completed in (("a", 3, 100.0), ("b", 7, 200.0), ("b", 8, None)):
        directory = tmp_path / job / f"chk-{checkpoint}"
        directory.mkdir(parents=True)
        if completed is not None:
            (directory / "_metadata").write_bytes(b"m")
            os.utime(directory / "_metadata", (completed, completed))
    assert newest_checkpoint(tmp_path) == tmp_path / "b" / "chk-7"  # chk-8 never completed
    assert newest_checkpoint(tmp_path, since=150.0) == tmp_path / "b" / "chk-7"
    assert newest_checkpoint(tmp_path, since=250.0) is None  # none of this start yet


def test_the_jobs_own_arguments_are_every_word_after_the_double_dash() -> None:
    given = parse(["job.jar", "--class", "Main", "--", "--window", "5s", "--set", "x"])
    assert (given.jar, given.main_class, given.set) == (Path("job.jar"), "Main", [])
    assert given.arguments == ["--window", "5s", "--set", "x"]
    assert parse(["job.jar"]).arguments == []


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["missing.jar"], "missing.jar: no such job jar"),
        (
            ["{jar}", "--set", "parallelism.default"],
            "--set 'parallelism.default': expected KEY=VALUE",
        ),
        (["{jar}", "--with", "flink-connector-kafka"], "expected Maven coordinates"),
    ],
    ids=["no-jar", "bad-setting", "bad-connector"],
)
def test_a_mistake_is_one_error_line_before_any_cluster_starts(
    tmp_path: Path, arguments: list[str], says: str
) -> None:
    jar = tmp_path / "job.jar"
    jar.write_bytes(b"PK")
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.apps.flink_job",
         *(argument.replace("{jar}", str(jar)) for argument in arguments)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and says in line, line


def test_a_failed_jobs_root_cause_ends_its_log(tmp_path: Path) -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "REPLAY_INPUT_TOPIC": "in",
           "REPLAY_OUTPUT_TOPIC": "out", "REPLAY_GROUP_ID": "jobs"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.apps.flink_job", str(reference_job_jar(catalog_dir())),
         "--class", "NoSuchJob"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-2000:]
    assert "at org.apache.flink" in result.stdout  # Flink's own account, relayed whole
    last = result.stderr.splitlines()[-1]
    assert last == "error: the job failed: java.lang.ClassNotFoundException: NoSuchJob", last


def test_a_relayed_output_keeps_every_line_and_names_the_last_cause() -> None:
    output = io.BytesIO()
    logged = b"start\nCaused by: java.io.IOException: a\n\tat x\nCaused by: Timeout: b\nend\n"
    assert relay(io.BytesIO(logged), output) == "Timeout: b"
    assert output.getvalue() == logged
    assert relay(io.BytesIO(b"fine\n"), io.BytesIO()) is None


def _copied(cluster: Cluster, topic: str, count: int) -> list[Message]:
    """What a read_committed reader finds in ``topic`` once it holds ``count`` records."""
    consumer = new_consumer(cluster, **{"isolation.level": "read_committed"})
    try:
        consumer.subscribe([topic])
        return consume_until(consumer, lambda found: len(found) >= count, timeout=60)
    finally:
        consumer.close()


def _copied_once(cluster: Cluster, topic: str, count: int) -> None:
    """Every one of ``count`` records in ``topic`` once, none twice."""
    values = sorted(message.value().decode() for message in _copied(cluster, topic, count))
    assert len(values) == len(set(values)) == count, values


def _supervised(
    cluster: Cluster, source: str, sink: str, history: RunHistory, tmp_path: Path, *options: str
) -> Supervisor:
    """The reference job as an app, its instance directory in ``tmp_path``."""
    command = (
        f"{shlex.quote(sys.executable)} -m kafka_replay.apps.flink_job "
        f"{reference_job_jar(catalog_dir())} --class ExactlyOnceJob {' '.join(options)}"
    )
    group = cluster.unique_name("flink")
    return Supervisor(
        AppSpec.parse(command),
        lambda i: AppContext(
            cluster.client_bootstrap_servers,
            source,
            sink,
            group,
            {"transaction.timeout.ms": 60000},
            i,
            properties_dir=tmp_path,
        ),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
        report_dir=history.events_dir,
        ready=lambda members: False,  # a Flink source joins no group: the job reports ready
    )


@pytest.mark.matrix  # the catalog's Flink incident runs a local cluster, killed and restored
def test_the_job_runs_on_loopback_and_a_killed_job_resumes_from_its_checkpoint(
    kafka_cluster: Cluster, kafka_topic, tmp_path: Path
) -> None:
    source, sink = kafka_topic("flink-in", partitions=2), kafka_topic("flink-out", partitions=2)
    history = RunHistory(tmp_path / "run")
    apps = _supervised(kafka_cluster, source, sink, history, tmp_path)
    try:
        with apps:
            apps.start(1)  # returns once the job completed a checkpoint
            (started,) = [e for e in history.read("lifecycle") if e["kind"] == "start"]
            wrapper = psutil.Process(started["pid"])
            (jvm,) = wrapper.children()
            listening = listening_addresses(jvm.pid)
            assert listening and {ip for ip, _ in listening} == {"127.0.0.1"}, listening

            produce_acked(kafka_cluster, source, [(f"k{n}", f"first-{n}") for n in range(50)])
            assert len(_copied(kafka_cluster, sink, 50)) == 50
            apps.signal(0, signal.SIGKILL)  # its JVM too: one process group
            eventually(
                lambda: "restoring from" in apps.output(0), 60, "a restart from a checkpoint"
            )
            produce_acked(kafka_cluster, source, [(f"k{n}", f"second-{n}") for n in range(50)])
            _copied_once(kafka_cluster, sink, 100)
    finally:
        history.close()
    assert not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE
    assert not (tmp_path / "flink-job-0" / "tmp").exists()  # its temporary files went with it


def test_a_session_cluster_runs_on_loopback_and_each_of_its_processes_can_be_killed_alone(
    kafka_cluster: Cluster, kafka_topic, tmp_path: Path
) -> None:
    """A TaskManager killed is started again and the job restarted on it inside the cluster;
    the JobManager killed takes the job with it, and the instance's next start resubmits it
    from its last checkpoint: nothing lost or repeated either way."""
    source, sink = kafka_topic("flink-in", partitions=2), kafka_topic("flink-out", partitions=2)
    history = RunHistory(tmp_path / "run")
    apps = _supervised(kafka_cluster, source, sink, history, tmp_path, "--cluster", "session")
    try:
        with apps:
            apps.start(1)  # returns once the job completed a checkpoint
            parts = apps.parts(0)
            assert set(parts) == {"jobmanager", "taskmanager-0"}, parts
            (started,) = [e for e in history.read("lifecycle") if e["kind"] == "start"]
            processes = psutil.Process(started["pid"]).children()
            assert len(processes) == 3  # the JobManager, the TaskManager, the job's client
            listening = [a for p in processes for a in listening_addresses(p.pid)]
            assert len(listening) >= 5 and {ip for ip, _ in listening} == {"127.0.0.1"}

            produce_acked(kafka_cluster, source, [(f"k{n}", f"first-{n}") for n in range(50)])
            assert len(_copied(kafka_cluster, sink, 50)) == 50
            with pytest.raises(RuntimeError, match="its parts: jobmanager, taskmanager-0"):
                apps.signal_part(0, "taskmanager-9", signal.SIGKILL)
            killed = parts["taskmanager-0"]
            assert kill_at_random(apps, random.Random(1), 1, (0.0, 0.1), threading.Event(),
                                  part="taskmanager-0") == 1  # fmt: skip
            eventually(
                lambda: apps.parts(0).get("taskmanager-0") not in (None, killed),
                30,
                "the TaskManager started again",
            )
            produce_acked(kafka_cluster, source, [(f"k{n}", f"second-{n}") for n in range(50)])
            assert len(_copied(kafka_cluster, sink, 100)) == 100
            assert apps.running() == [0]  # the instance itself never stopped

            apps.signal_part(0, "jobmanager", signal.SIGKILL)
            eventually(lambda: "restoring from" in apps.output(0), 60, "a resubmission")
            assert "error: the JobManager was ended by SIGKILL" in apps.output(0)
            produce_acked(kafka_cluster, source, [(f"k{n}", f"third-{n}") for n in range(50)])
            _copied_once(kafka_cluster, sink, 150)
    finally:
        history.close()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)
    assert not (tmp_path / "flink-job-0" / "tmp").exists()
