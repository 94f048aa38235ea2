"""Run several incidents in one go, sharing clusters and one Spark session between them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_replay.checker.spark import check_master
from kafka_replay.cluster.pool import DEFAULT_MAX_LIVE, ClusterPool
from kafka_replay.report.outcome import Outcome

from .model import Incident
from .runner import RunOptions, run_incident

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class CatalogSession:
    """Brokers (one per distinct broker config, started on demand) and Spark, until closed."""

    def __init__(
        self,
        work_dir: Path,
        kafka_version: str | None = None,
        backend: str | None = None,
        image: str | None = None,
        bootstrap_servers: str | None = None,
        spark_master: str | None = None,
        runs_dir: Path | None = None,
        max_live_clusters: int = DEFAULT_MAX_LIVE,
    ) -> None:
        self.work_dir = work_dir
        self.runs_dir = runs_dir or work_dir / "runs"
        self.kafka_version, self.backend = kafka_version, backend
        self._spark_master = check_master(spark_master)  # refused now, not after the first run
        self.pool = ClusterPool(
            work_dir / "kafka", bootstrap_servers, max_live=max_live_clusters, image=image
        )
        self._spark: SparkSession | None = None
        #: The cluster of each run: one per distinct broker config (and brokers, proxies).
        self.cluster_for = self.pool.cluster_for(kafka_version, backend)

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            from kafka_replay.checker import spark_session

            self._spark = spark_session(self._spark_master, small_runs=True)
            self._spark.sparkContext.setLogLevel("ERROR")
        return self._spark

    def run(
        self,
        incident: Incident,
        profile: str,
        options: RunOptions,
        progress: Callable[[str], None] = lambda line: None,
    ) -> Outcome:
        return run_incident(
            incident,
            profile,
            cluster_for=self.cluster_for,
            spark=lambda: self.spark,
            run_dir=self.runs_dir / f"{incident.name}-{profile}",
            options=options,
            progress=progress,
        )

    def close(self) -> None:
        try:
            self.pool.close()
        finally:
            if self._spark is not None:
                self._spark.stop()
                self._spark = None

    def __enter__(self) -> CatalogSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
