"""Runs whose app writes rows: the run's own PostgreSQL, the incident's tables, the contract's
database variables, and the checker's accounting of the rows, on real Kafka and Spark.

The catalog's database incidents replay with the Python reference apps as ``-k incident``
items; here they replay with the JVM ones, and an app with a table and a topic has both
judged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.cluster import choose_version
from kafka_replay.cluster.backends import choose_backend
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.definitions.definition import load_incident
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.runner import run_incident
from kafka_replay.report.outcome import Outcome
from kafka_replay.sinks.postgres import postgres_unavailable

JVM_CLIENT = "kafka-clients==3.9.1"
TWO_OUTPUTS = Path(__file__).parent / "sink_incidents" / "rows-and-topic.toml"

pytestmark = pytest.mark.skipif(
    postgres_unavailable() is not None, reason=postgres_unavailable() or ""
)


@pytest.mark.parametrize(
    ("name", "profile", "result"),
    [
        pytest.param("crash-restart-db", "vulnerable", "reproduced", marks=pytest.mark.matrix),
        pytest.param("crash-restart-db", "remediated", "cured", marks=pytest.mark.matrix),
        pytest.param(
            "poll-timeout-rebalance-db", "vulnerable", "reproduced", marks=pytest.mark.matrix
        ),
        ("poll-timeout-rebalance-db", "remediated", "cured"),
    ],
)
def test_the_jvm_billing_service_replays_its_post(
    replay_incident: Callable[..., Outcome], name: str, profile: str, result: str
) -> None:
    outcome = replay_incident(name, profile, client_library=JVM_CLIENT)
    assert (outcome.app, outcome.result, outcome.passed) == ("Billing", result, True), (
        outcome.explain()
    )
    if profile == "vulnerable":  # charged again: rows, and amounts, for inputs charged before
        assert outcome.anomalies["duplicate"] >= 1, outcome.explain()
        assert outcome.anomalies["effect_repeated"] == outcome.anomalies["duplicate"]
    else:  # every student charged once per event, nothing lost
        assert outcome.verdict == "exactly-once", outcome.explain()
    run = Path(outcome.run_dir)
    assert "kafka-clients 3.9.1 (" in (run / "logs" / "app-0.log").read_text()
    assert not list(run.glob("logs/postgres-data*"))  # the server's data is gone


def test_an_app_with_a_table_and_a_topic_has_both_judged(
    kafka_cluster_pool: ClusterPool, spark: SparkSession, tmp_path: Path
) -> None:
    """Every tenth input gets two rows and one output record: the table fails exactly-once,
    the topic passes it, and the run's gate takes the table's."""
    outcome = run_incident(
        load_incident(TWO_OUTPUTS),
        "remediated",
        cluster_for=kafka_cluster_pool.cluster_for(choose_version(None), choose_backend(None)),
        spark=lambda: spark,
        run_dir=tmp_path / "run",
        options=RunOptions(),
    )
    table, topic = outcome.outputs
    assert table == "table results" and topic.startswith("topic rows-and-topic-output")
    assert outcome.outputs[topic]["verdict"] == "exactly-once", outcome.explain()
    assert outcome.outputs[table]["check"] == "fail", outcome.explain()
    assert outcome.outputs[table]["anomalies"]["duplicate"] == 30  # offsets 0, 10, ... 290
    assert (outcome.check, outcome.passed) == ("fail", False)
    assert outcome.anomalies == outcome.outputs[table]["anomalies"]
    assert (tmp_path / "run" / "check-output-topic.json").is_file()
    assert f"{table}: at-least-once, fail" in outcome.explain()
