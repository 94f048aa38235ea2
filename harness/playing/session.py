"""Run several incidents in one go, sharing clusters and one Spark session between them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_replay.checker.spark import check_master, remote_url
from kafka_replay.cluster.pool import DEFAULT_MAX_LIVE, ClusterPool
from kafka_replay.definitions.model import Incident
from kafka_replay.interrupts import interrupted
from kafka_replay.report.outcome import Outcome

from .run_options import RunOptions
from .runner import PlayedRun, play_incident

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class SessionClosed(RuntimeError):
    """Spark asked of a session already closed (a lane's thread outliving its interruption)."""


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
        # refused now, not after the first run; None: on the Spark Connect server named
        self._spark_master = None if remote_url(spark_master) else check_master(spark_master)
        self.pool = ClusterPool(
            work_dir / "kafka", bootstrap_servers, max_live=max_live_clusters, image=image
        )
        self._spark: SparkSession | None = None
        #: Held while Spark starts or stops: a warm-up in a lane's thread must not start Spark
        #: after (or while) an interrupted lane closes the session.
        self._spark_lock = threading.Lock()
        self._closed = False
        #: The cluster of each run, lent to it until it is concluded: one per distinct broker
        #: config (and brokers, proxies), and another while a run of the same is concluding.
        self.cluster_for = self.pool.cluster_for(kafka_version, backend, lend=True)

    @property
    def spark(self) -> SparkSession:
        with self._spark_lock:
            if self._closed:
                raise SessionClosed("the session is closed: Spark is not started again")
            if self._spark is None:
                from kafka_replay.checker.spark import is_remote, spark_session

                self._spark = spark_session(self._spark_master, small_runs=True)
                if not is_remote(self._spark):  # a Spark Connect server logs as it started
                    self._spark.sparkContext.setLogLevel("ERROR")
            return self._spark

    def warm_up(self) -> None:
        """Start Spark and check a made-up run in it: the first real check then finds it warm.

        A failure is only logged: the first real check starts Spark again, and if that fails
        too, its run's outcome says what broke.
        """
        from kafka_replay.checker.warm_up import warm_up

        try:
            spark = self.spark
            self.work_dir.mkdir(parents=True, exist_ok=True)
            warm_up(spark, self.work_dir)
        except SessionClosed:
            return
        except Exception as exc:
            if interrupted(exc):
                raise
            log.warning("warming Spark up before the first check failed: %s", exc)

    def run(
        self,
        incident: Incident,
        profile: str,
        options: RunOptions,
        progress: Callable[[str], None] = lambda line: None,
    ) -> Outcome:
        return self.conclude(self.play(incident, profile, options, progress))

    def play(
        self,
        incident: Incident,
        profile: str,
        options: RunOptions,
        progress: Callable[[str], None] = lambda line: None,
    ) -> PlayedRun:
        """A run's start-up and steps (see :func:`play_incident`), on a cluster of its own."""
        return play_incident(
            incident,
            profile,
            cluster_for=self.cluster_for,
            run_dir=self.runs_dir / f"{incident.name}-{profile}",
            options=options,
            progress=progress,
        )

    def conclude(self, played: PlayedRun) -> Outcome:
        """The rest of a played run; its cluster then serves the next run of its kind."""
        try:
            return played.conclude(lambda: self.spark)
        finally:
            if played.cluster is not None:
                self.pool.give_back(played.cluster)

    def close(self) -> None:
        try:
            self.pool.close()
        finally:
            with self._spark_lock:
                self._closed = True
                if self._spark is not None:
                    self._spark.stop()
                    self._spark = None

    def __enter__(self) -> CatalogSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
