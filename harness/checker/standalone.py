"""A Spark standalone master and worker on 127.0.0.1, for running the checker on a cluster.

Started from PySpark's own ``spark-class``; ready when the master's status page lists an
alive worker. Both processes are leased like brokers, so nothing outlives the harness.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

import pyspark

from kafka_replay.servers.lifecycle import Server
from kafka_replay.servers.ports import free_ports
from kafka_replay.servers.process import spawn
from kafka_replay.servers.reaper import Lease, reap_orphans
from kafka_replay.servers.server_log import read_tail
from kafka_replay.waiting import wait_for

READY_TIMEOUT_S = 120.0


class StandaloneSpark(Server):
    """``with StandaloneSpark() as spark: check(..., master=spark.master_url)``."""

    def __init__(self, worker_cores: int = 2, worker_memory: str = "2g") -> None:
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self._lease: Lease | None = None
        self._processes: list = []
        self.master_url = ""
        self._status_url = ""
        self.log_dir = Path()

    def start(self) -> StandaloneSpark:
        reap_orphans()
        self._lease = Lease.take()
        self.log_dir = Path(tempfile.mkdtemp(prefix="kafka-replay-spark-"))
        self._lease.add_dir(self.log_dir)
        port, ui, worker_ui = free_ports(3)
        self.master_url = f"spark://127.0.0.1:{port}"
        self._status_url = f"http://127.0.0.1:{ui}/json/"
        spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
        env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_HOME": str(Path(pyspark.__file__).parent),
        }
        try:
            self._run(
                "master",
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
                env,
            )
            self._run(
                "worker",
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.worker_cores),
                    "--memory",
                    self.worker_memory,
                    "--webui-port",
                    str(worker_ui),
                ],
                env,
            )
            self._wait_for_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=15)
            except Exception:
                process.kill()
        self._processes.clear()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def status(self) -> dict:
        """The master's status: its workers, running and completed applications."""
        with urllib.request.urlopen(self._status_url, timeout=5) as response:
            return json.load(response)

    def _run(self, name: str, command: list[str], env: dict[str, str]) -> None:
        assert self._lease is not None
        with (self.log_dir / f"{name}.log").open("ab") as output:
            self._processes.append(spawn(command, output, self._lease, env=env))

    def _wait_for_worker(self) -> None:
        def registered() -> bool:
            for process, name in zip(self._processes, ("master", "worker"), strict=False):
                if process.poll() is not None:
                    tail = read_tail(self.log_dir / f"{name}.log", 30)
                    raise RuntimeError(f"the Spark {name} exited ({process.returncode}):\n{tail}")
            try:
                workers = self.status().get("workers", [])
            except OSError:
                return False
            return any(worker.get("state") == "ALIVE" for worker in workers)

        missing = f"no Spark worker registered within {READY_TIMEOUT_S:.0f}s"
        wait_for(registered, READY_TIMEOUT_S, missing, every_s=0.5)
