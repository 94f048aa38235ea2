"""One Spark for several processes: a Spark Connect server whose sessions are their checks.

Each ``kafka-replay run`` process starts a Spark driver of its own, whose first check is slow
while its JVM warms up. A Spark Connect server (shipped in PySpark's own jars) is started once
instead for processes that run one after another (``kafka-replay compare``'s sides) or under
pytest (``--replay-shared-spark``); each is its client, with a session of its own on the one
warm JVM, and builds its queries without a round trip to the JVM per step. Lanes side by side
keep a driver each: on one server their checks queue for its two task slots
(docs/benchmarks.md measures both). The server binds 127.0.0.1 only and dies with the process
that started it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Self

import pyspark

from kafka_replay.servers.lifecycle import Server
from kafka_replay.servers.ports import accepts_connections, free_ports
from kafka_replay.servers.process import spawn, wait_answering
from kafka_replay.servers.reaper import Lease
from kafka_replay.servers.server_errors import ServerError

from .spark import (
    C1_ONLY,
    CALL_SITES_OFF,
    DEFAULT_MASTER,
    LOG_CONFIG,
    MAX_SHUFFLE_PARTITIONS,
    REMOTE_ENV,
    kafka_connector_jars,
)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 30.0
#: The shared driver's heap: several processes' incident-sized checks at once, with room to spare.
HEAP = "3g"


def importable_from_here() -> str:
    """A ``PYTHONPATH`` for the server's Python workers: what this process imports from (its
    directory first, then ``sys.path``). A client pickles a user's function (``--output-id
    module:function``) by its module's name, and the workers run in a directory of Spark's own,
    where a module of the user's directory would not be found."""
    places = [os.getcwd(), *sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return os.pathsep.join(dict.fromkeys(p for p in places if p and os.path.isdir(p)))


class SparkConnectServer(Server):
    """A Spark Connect server on 127.0.0.1, started by :meth:`start`, stopped on exit."""

    def __init__(self, log_path: Path, lease: Lease, master: str = DEFAULT_MASTER) -> None:
        self.log_path, self.lease, self.master = log_path, lease, master
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        assert self.port is not None, "not started"
        return f"sc://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """Its process while it runs."""
        return self._process.pid if self._process is not None else None

    def command(self, port: int) -> list[str]:
        jars = ",".join(str(jar) for jar in kafka_connector_jars())
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        java_options = " ".join([*C1_ONLY, f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"])
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": str(MAX_SHUFFLE_PARTITIONS),
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.memory": HEAP,
            "spark.driver.extraJavaOptions": java_options,
            **CALL_SITES_OFF,  # a client asks the server's setting
        }
        conf = [part for key, value in settings.items() for part in ("--conf", f"{key}={value}")]
        return [
            str(submit),
            "--class",
            SERVER_CLASS,
            "--master",
            self.master,
            "--jars",
            jars,
            *conf,
            "spark-internal",
        ]

    def start(self) -> Self:
        """Start it and wait until it accepts connections (its :attr:`url`)."""
        self.launch()
        self.wait_ready()
        return self

    def launch(self) -> str:
        """Start it, not waiting for it: its URL, for clients started meanwhile (a client
        retries while the server is not up yet; :meth:`wait_ready` says if it never is)."""
        port = free_ports(1)[0]
        env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            # its Python workers run a user's output-id function: this interpreter's packages
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "PYTHONPATH": importable_from_here(),
        }
        env.pop(REMOTE_ENV, None)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._process = spawn(self.command(port), log, self.lease, env=env)
        self.port = port
        return self.url

    def wait_ready(self) -> None:
        """Wait until it accepts connections; :class:`ServerError` with its log's end if it
        exits first or takes longer than :data:`START_TIMEOUT_S`."""
        process, port = self._process, self.port
        assert process is not None and port is not None, "not launched"
        why = wait_answering(lambda: accepts_connections(port), process.poll, START_TIMEOUT_S)
        if why is not None:
            tail = self.log_path.read_text(errors="replace").strip().splitlines()[-8:]
            self.stop()
            raise ServerError(
                f"the Spark Connect server on 127.0.0.1:{port} {why}; its last output: "
                f"{' | '.join(tail) or '(none)'} (log: {self.log_path})"
            )

    def stop(self) -> None:
        """SIGTERM (Spark stops its context), then SIGKILL to its whole process group (its
        Python workers) after :data:`STOP_GRACE_S`."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_GRACE_S)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # what is left of its group: Python workers
        process.wait()
