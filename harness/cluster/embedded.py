"""The default backend: real Apache Kafka brokers in KRaft mode, run as local JVM processes.

Each node is a combined broker and controller bound to 127.0.0.1 on free ports. Kafka's own
jars come from Maven Central through :mod:`harness.cluster.artifacts` and are cached, so a
second start works offline. A node is ready when a metadata request through a real client
lists every broker.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from . import broker_config
from .artifacts import kafka_classpath
from .base import Cluster
from .errors import BrokerDiedError, BrokerStartError
from .jvm import find_java
from .ports import accepts_connections, free_ports
from .process import spawn
from .reaper import Lease, reap_orphans
from .versions import choose_version

log = logging.getLogger(__name__)

HEAP_ENV = "KAFKA_REPLAY_BROKER_HEAP"
DEFAULT_HEAP = "768m"
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
PORT_CLASH = "Address already in use"
START_ATTEMPTS = 3


def _log_tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _cluster_id() -> str:
    """A random KRaft cluster id (base64url UUID, never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class BrokerNode:
    """One combined broker+controller JVM; it keeps its own config, data and log paths."""

    def __init__(self, address: broker_config.NodeAddress, data_dir: Path, log_dir: Path) -> None:
        self.address = address
        self.data_dir = data_dir
        self.config_path = data_dir.parent / f"node-{address.node_id}.properties"
        self.log_path = log_dir / f"broker-{address.node_id}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = False

    @property
    def node_id(self) -> int:
        return self.address.node_id

    @property
    def port(self) -> int:
        return self.address.port

    def write_config(self, properties: Mapping[str, str]) -> None:
        self.config_path.write_text(broker_config.render_properties(properties))

    def start(self, jvm_command: list[str], die_with_owner: bool, lease: Lease) -> None:
        with self.log_path.open("ab") as output:
            self.process = spawn(
                [*jvm_command, "kafka.Kafka", str(self.config_path)],
                output,
                lease,
                die_with_owner=die_with_owner,
            )
        self._stopping = False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exited_unexpectedly(self) -> bool:
        return self.process is not None and not self._stopping and self.process.poll() is not None

    def terminate(self) -> None:
        """Ask for a clean shutdown (SIGTERM); :meth:`wait_stopped` finishes it."""
        if self.alive():
            self._stopping = True
            assert self.process is not None
            self.process.terminate()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.alive():
            self._stopping = True
            assert self.process is not None
            self.process.kill()
            self.process.wait()

    def wait_stopped(self, grace: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log.warning("broker %d ignored SIGTERM for %.0fs; killing it", self.node_id, grace)
            self.kill()

    def log_tail(self, lines: int = 40) -> str:
        return _log_tail(self.log_path, lines)


class EmbeddedCluster(Cluster):
    """``brokers`` real Kafka nodes in local JVMs; use as a context manager or call start/stop."""

    def __init__(
        self,
        version: str | None = None,
        brokers: int = 1,
        broker_config_overrides: Mapping[str, object] | None = None,
        work_dir: Path | None = None,
        heap: str | None = None,
        die_with_owner: bool = True,
    ) -> None:
        super().__init__()
        if brokers < 1:
            raise ValueError(f"brokers must be at least 1, got {brokers}")
        self.version = choose_version(version)
        self.brokers = brokers
        self.overrides = broker_config.validate_overrides(broker_config_overrides or {})
        self.heap = heap or os.environ.get(HEAP_ENV, DEFAULT_HEAP)
        self.die_with_owner = die_with_owner
        self._work_dir = Path(work_dir) if work_dir else None
        self.nodes: list[BrokerNode] = []
        self._lease: Lease | None = None
        self.data_dir: Path | None = None
        self.log_dir: Path | None = None

    @property
    def bootstrap_servers(self) -> str:
        if not self.nodes:
            raise RuntimeError("the cluster is not started")
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def start(self, timeout: float = START_TIMEOUT_S) -> EmbeddedCluster:
        """Start every node and wait until all are serving; raise with their log tail if not."""
        reap_orphans()
        classpath = kafka_classpath(self.version)  # before the lease: may take minutes once
        self._lease = Lease.take()
        try:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kafka-replay-data-"))
            self._lease.add_dir(self.data_dir)
            if self._work_dir is None:
                self.log_dir = self.data_dir / "logs"
            else:
                self.log_dir = self._work_dir
            self.log_dir.mkdir(parents=True, exist_ok=True)
            jvm = self._jvm_command(classpath)
            for attempt in range(1, START_ATTEMPTS + 1):
                try:
                    self._start_nodes(jvm, timeout)
                    break
                except BrokerStartError as exc:
                    if PORT_CLASH not in str(exc) or attempt == START_ATTEMPTS:
                        raise
                    log.warning("a port was taken before the broker bound it; retrying")
                    self._stop_nodes(grace=0)
        except BaseException:
            self.stop()
            raise
        log.info("Kafka %s ready at %s", self.version, self.bootstrap_servers)
        return self

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop every node (SIGTERM, then SIGKILL after ``grace``) and remove the data."""
        self._admin = None
        self._stop_nodes(grace)
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def check_alive(self) -> None:
        for node in self.nodes:
            if node.exited_unexpectedly():
                assert node.process is not None
                raise BrokerDiedError(
                    f"Kafka broker {node.node_id} exited with code {node.process.returncode}; "
                    f"log {node.log_path}:\n{node.log_tail()}"
                )

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(
            f"--- broker {n.node_id} ({n.log_path}) ---\n{n.log_tail(lines)}" for n in self.nodes
        )

    def log_files(self) -> list[str]:
        return [str(node.log_path) for node in self.nodes]

    def __enter__(self) -> EmbeddedCluster:
        if not self.nodes:
            self.start()
        return self

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.nodes else "not started"
        return f"EmbeddedCluster(kafka {self.version}, {self.brokers} broker(s), {where})"

    # --- internals ---------------------------------------------------------------------

    def _jvm_command(self, classpath: list[Path]) -> list[str]:
        assert self._lease is not None and self.log_dir is not None
        log4j = resources.files("harness.cluster") / "resources" / "log4j2.properties"
        return [
            find_java(),
            "-Xms128m",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.log_dir}",
            "-cp",
            os.pathsep.join(str(jar) for jar in classpath),
        ]

    def _start_nodes(self, jvm: list[str], timeout: float) -> None:
        assert self._lease is not None and self.data_dir is not None and self.log_dir is not None
        ports = free_ports(2 * self.brokers)
        addresses = [
            broker_config.NodeAddress(i + 1, ports[2 * i], ports[2 * i + 1])
            for i in range(self.brokers)
        ]
        self.nodes = []
        for address in addresses:
            node_dir = self.data_dir / f"node-{address.node_id}"
            shutil.rmtree(node_dir, ignore_errors=True)
            node = BrokerNode(address, node_dir, self.log_dir)
            node.write_config(
                broker_config.node_properties(address, addresses, str(node_dir), self.overrides)
            )
            self.nodes.append(node)
        self._format_storage(jvm)
        for node in self.nodes:
            node.start(jvm, self.die_with_owner, self._lease)
        self._wait_ready(timeout)

    def _format_storage(self, jvm: list[str]) -> None:
        """Run Kafka's own storage formatter for every node at once."""
        cluster_id = _cluster_id()
        running = []
        for node in self.nodes:
            with node.log_path.open("ab") as output:
                command = [*jvm, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                           "-c", str(node.config_path), "--ignore-formatted"]  # fmt: skip
                process = spawn(command, output, self._lease, die_with_owner=self.die_with_owner)
                running.append((node, process))
        for node, process in running:
            if process.wait(timeout=START_TIMEOUT_S) != 0:
                raise BrokerStartError(
                    f"Kafka {self.version} could not format storage for broker {node.node_id} "
                    f"(exit {process.returncode}); log {node.log_path}:\n{node.log_tail()}"
                )

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        admin: AdminClient | None = None
        while True:
            for node in self.nodes:
                if not node.alive():
                    assert node.process is not None
                    raise BrokerStartError(
                        f"Kafka {self.version} broker {node.node_id} exited with code "
                        f"{node.process.returncode} while starting; log {node.log_path}:\n"
                        f"{node.log_tail()}"
                    )
            if admin is None and all(accepts_connections(n.port) for n in self.nodes):
                admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
            if admin is not None and self._lists_every_broker(admin):
                return
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"Kafka {self.version} did not answer a metadata request listing all "
                    f"{self.brokers} broker(s) within {timeout:.0f}s:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def _lists_every_broker(self, admin: AdminClient) -> bool:
        try:
            metadata = admin.list_topics(timeout=2)
        except KafkaException:
            return False
        return len(metadata.brokers) == self.brokers

    def _stop_nodes(self, grace: float) -> None:
        for node in self.nodes:
            node.terminate()
        for node in self.nodes:
            node.wait_stopped(grace)
