"""The checker on real runs: apps that duplicate or lose on purpose are caught, and a correct
transactional app is judged exactly-once. Real broker, real app processes, real Spark."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from kafka_replay.apps import AppContext, AppSpec, Supervisor
from kafka_replay.checker import KafkaOutput, check_run
from kafka_replay.cluster import Cluster
from kafka_replay.history import OffsetsRecorder, RunHistory
from kafka_replay.history.consumer_offsets import group_reader
from kafka_replay.history.lag import sample_lag
from kafka_replay.waiting import wait_for
from kafka_replay.workload import WorkloadProducer, student_onboarding

#: The app behind each mode: two that break a guarantee on purpose, and the reference
#: exactly-once app of the catalog.
APPS = {
    "duplicate": "-m tests.apps.faulty duplicate",
    "lose": "-m tests.apps.faulty lose",
    "transactional": "-m kafka_replay_incidents.apps.eos_processor",
}


def run_app(cluster: Cluster, kafka_topic, tmp_path, mode: str) -> tuple[RunHistory, str, str]:
    """Feed 100 records to the app, wait until its group has committed them all, stop it.

    Returns the history, the input topic and the output topic.
    """
    source, sink = kafka_topic("input", partitions=3), kafka_topic("output", partitions=2)
    group = cluster.unique_name("app")
    history = RunHistory(tmp_path / mode)
    recorder = OffsetsRecorder(cluster.bootstrap_servers, group, history.stream("offsets")).start()
    WorkloadProducer(cluster.bootstrap_servers, source, history.stream("produce")).run(
        student_onboarding(count=100, students=12, seed=3)
    )
    command = f"{shlex.quote(sys.executable)} {APPS[mode]}"
    apps = Supervisor(
        AppSpec.parse(command),
        lambda i: AppContext(cluster.bootstrap_servers, source, sink, group, {}, i),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
    ).start(1)
    reader = group_reader(cluster.bootstrap_servers, group)
    try:
        rows: list[dict] = []

        def caught_up() -> bool:
            rows[:] = sample_lag(reader, group, source)
            return all(row["committed"] is not None and row["lag"] == 0 for row in rows)

        wait_for(
            caught_up,
            90,
            lambda: f"the app never caught up: {rows}",
            every_s=0.2,
            error=AssertionError,
        )
    finally:
        reader.close()
        apps.stop()
        recorder.stop()
    return history, source, sink


def run_check_command(
    cluster: Cluster, history: RunHistory, sink: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """``kafka-replay check`` on a run's history and output topic, as its own process."""
    command = [
        sys.executable,
        "-m",
        "kafka_replay.cli",
        "check",
        str(history.root),
        "--kafka-bootstrap",
        cluster.bootstrap_servers,
        "--output-topic",
        sink,
        *options,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("mode", "guarantee", "expected_verdict", "expected_result"),
    [
        ("duplicate", "exactly-once", "at-least-once", "fail"),
        ("lose", "at-least-once", "at-most-once", "fail"),
        ("transactional", "exactly-once", "exactly-once", "pass"),
    ],
)
def test_the_checker_judges_real_runs(
    kafka_cluster: Cluster,
    kafka_topic,
    tmp_path,
    spark,
    mode,
    guarantee,
    expected_verdict,
    expected_result,
) -> None:
    history, source, sink = run_app(kafka_cluster, kafka_topic, tmp_path, mode)
    bootstrap = kafka_cluster.bootstrap_servers
    result = check_run(
        spark,
        history.root,
        KafkaOutput(bootstrap, sink),
        guarantee,
        source=KafkaOutput(bootstrap, source),  # as the runner reads the input log
    )
    print(result.summary())
    assert (result.verdict, result.result) == (expected_verdict, expected_result)
    counts = result.counts
    assert result.totals["acknowledged"] == 100
    assert result.totals["log_records"] == 100  # the brokers kept every write, once, in order
    assert counts["lost_write"] == counts["log_duplicate"] == counts["log_reordered"] == 0
    if mode == "duplicate":
        assert counts["duplicate"] == 20 and counts["lost"] == 0
    if mode == "lose":
        assert counts["lost"] == 20 and counts["duplicate"] == 0
        # each example comes with the app's lifecycle around it: here, the start that lost it
        context = result.findings["lost"].examples[0]["context"]
        assert [event["kind"] for event in context][:1] == ["start"]
    if mode == "transactional":
        assert all(count == 0 for count in counts.values()), counts
        assert result.totals["delivered"] == 100


def test_kafka_replay_check_writes_the_report_and_gates_on_it(
    kafka_cluster: Cluster, kafka_topic, tmp_path
) -> None:
    import json

    history, source, sink = run_app(kafka_cluster, kafka_topic, tmp_path, "duplicate")
    strict = run_check_command(kafka_cluster, history, sink, "--guarantee", "exactly-once")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "verdict at-least-once against declared exactly-once: FAIL" in strict.stdout
    report = json.loads((history.root / "check.json").read_text())
    assert report["anomalies"]["duplicate"]["count"] == 20
    assert report["anomalies"]["duplicate"]["distribution"] == {"2": 20}
    assert "log_records" not in report["totals"]  # the input log was not read
    lenient = run_check_command(
        kafka_cluster, history, sink, "--guarantee", "at-least-once", "--input-topic", source
    )
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    report = json.loads((history.root / "check.json").read_text())
    assert report["totals"]["log_records"] == 100
    assert report["anomalies"]["lost_write"]["count"] == 0
    assert report["anomalies"]["log_duplicate"]["count"] == 0


@pytest.mark.matrix  # another Spark master: ./dev bench matrix spark (made room for Flink's items)
def test_the_checker_runs_on_a_spark_standalone_cluster(
    kafka_cluster: Cluster, kafka_topic, tmp_path
) -> None:
    import json

    from kafka_replay.checker.standalone import StandaloneSpark

    history, _, sink = run_app(kafka_cluster, kafka_topic, tmp_path, "transactional")
    with StandaloneSpark(worker_cores=1, worker_memory="1g") as cluster:
        result = run_check_command(
            kafka_cluster, history, sink, "--guarantee", "exactly-once",
            "--spark-master", cluster.master_url,
        )  # fmt: skip
        applications = cluster.status()["completedapps"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((history.root / "check.json").read_text())["verdict"] == "exactly-once"
    assert [app["name"] for app in applications] == ["kafka-replay-checker"]
