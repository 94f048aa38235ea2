"""A run whose app writes rows: the run's own PostgreSQL, the incident's tables, the contract's
database variables, and the checker's accounting of the rows, on real Kafka and Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.cluster import choose_version
from kafka_replay.cluster.backends import choose_backend
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.replay.definition import load_incident
from kafka_replay.replay.runner import RunOptions, run_incident
from kafka_replay.sinks.postgres import postgres_unavailable

DEFINITION = Path(__file__).parent / "sink_incidents" / "crash-restart-db.toml"

pytestmark = pytest.mark.skipif(
    postgres_unavailable() is not None, reason=postgres_unavailable() or ""
)


@pytest.mark.parametrize("profile", ["vulnerable", "remediated"])
def test_a_billing_service_killed_at_random(
    kafka_cluster_pool: ClusterPool, spark: SparkSession, tmp_path: Path, profile: str
) -> None:
    outcome = run_incident(
        load_incident(DEFINITION),
        profile,
        cluster_for=kafka_cluster_pool.cluster_for(choose_version(None), choose_backend(None)),
        spark=lambda: spark,
        run_dir=tmp_path / "run",
        options=RunOptions(),
    )
    print(outcome.explain())
    assert outcome.symptoms["kills"] >= 4, outcome.explain()
    if profile == "vulnerable":  # charged again: rows, and amounts, for inputs charged before
        assert outcome.reproduced, outcome.explain()
        assert outcome.anomalies["duplicate"] >= 1 and outcome.anomalies["effect_repeated"] >= 1
    else:  # every student charged once per event, nothing lost
        assert (outcome.passed, outcome.verdict) == (True, "exactly-once"), outcome.explain()
    assert not list(tmp_path.glob("run/logs/postgres-data*"))  # the server's data is gone
