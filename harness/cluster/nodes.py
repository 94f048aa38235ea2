"""Clusters whose nodes the harness runs itself, whatever runs them (JVMs or containers).

A backend says how to prepare (resolve jars, find an image) and how to launch nodes on given
addresses; this module does the rest the same way for all: free ports, a lease for cleanup,
waiting until a real metadata request lists every broker, errors that end with the log
tail, and stopping in order.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import time
from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, Self

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from . import broker_config
from .base import Cluster
from .errors import BrokerDiedError, BrokerStartError
from .ports import accepts_connections, free_ports
from .reaper import Lease, reap_orphans
from .versions import choose_version

log = logging.getLogger(__name__)

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
PORT_CLASH = "Address already in use"
START_ATTEMPTS = 3
#: Below this much free space where a node keeps its data or logs, it is not started.
MIN_FREE_BYTES = 64 * 2**20


class Node(Protocol):
    """One combined broker+controller, however it runs."""

    address: broker_config.NodeAddress

    @property
    def node_id(self) -> int: ...
    @property
    def port(self) -> int: ...
    @property
    def log_location(self) -> str: ...
    def exit_code(self) -> int | None: ...
    def alive(self) -> bool: ...
    def exited_unexpectedly(self) -> bool: ...
    def terminate(self) -> None: ...
    def wait_stopped(self, grace: float) -> None: ...
    def kill(self) -> None: ...
    def log_tail(self, lines: int = 40) -> str: ...


def refused_config(log: str) -> str:
    """``the broker refused its config: <Kafka's words>. ...`` when it did, else ``""``.

    Kafka checks every ``server.properties`` value when a node formats its storage or starts,
    and exits with a ``ConfigException`` naming the property; that line leads the error.
    """
    match = re.search(r"ConfigException: (.+)", log)
    if match is None:
        return ""
    return (
        f"the broker refused its config: {match.group(1).strip()}. Fix that property (the "
        "incident's [broker] table, or --broker-config). "
    )


def check_free_space(*directories: Path) -> None:
    """Refuse to start brokers where there is no room for their data and logs."""
    for directory in directories:
        free = shutil.disk_usage(directory).free
        if free < MIN_FREE_BYTES:
            raise BrokerStartError(
                f"no space for Kafka's data in {directory}: {free / 2**20:.1f} MiB free, a broker "
                f"needs at least {MIN_FREE_BYTES // 2**20} MiB; free some space there, or point "
                "TMPDIR (broker data) or --report/--log-dir (logs) at a disk with room"
            )


def read_tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


class NodeCluster(Cluster):
    """``brokers`` KRaft nodes started by the harness; a context manager, or start/stop."""

    backend = "?"

    def __init__(
        self,
        version: str | None = None,
        brokers: int = 1,
        broker_config_overrides: Mapping[str, object] | None = None,
        work_dir: Path | None = None,
    ) -> None:
        super().__init__()
        if brokers < 1:
            raise ValueError(f"brokers must be at least 1, got {brokers}")
        self.version = choose_version(version)
        self.brokers = brokers
        self.overrides = broker_config.validate_overrides(broker_config_overrides or {})
        self._work_dir = Path(work_dir) if work_dir else None
        self.nodes: list[Node] = []
        self._lease: Lease | None = None
        self.data_dir: Path | None = None
        self.log_dir: Path | None = None

    # --- what a backend provides ----------------------------------------------------------

    def _prepare(self) -> None:
        """Slow one-time work before the lease is taken (resolving jars, finding an image)."""

    @abstractmethod
    def _launch(self, addresses: list[broker_config.NodeAddress]) -> list[Node]:
        """Start one node per address (their configs from :meth:`_node_properties`)."""

    # --- shared ---------------------------------------------------------------------------

    @property
    def lease(self) -> Lease:
        if self._lease is None:
            raise RuntimeError("the cluster is not started")
        return self._lease

    @property
    def bootstrap_servers(self) -> str:
        if not self.nodes:
            raise RuntimeError("the cluster is not started")
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def start(self, timeout: float = START_TIMEOUT_S) -> Self:
        """Start every node and wait until all are serving; raise with their log tail if not."""
        reap_orphans()
        self._prepare()
        self._lease = Lease.take()
        try:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kafka-replay-data-"))
            self._lease.add_dir(self.data_dir)
            self.log_dir = self._work_dir or self.data_dir / "logs"
            self.log_dir.mkdir(parents=True, exist_ok=True)
            check_free_space(self.data_dir.parent, self.log_dir)
            for attempt in range(1, START_ATTEMPTS + 1):
                try:
                    self.nodes = self._launch(self._addresses())
                    self._wait_ready(timeout)
                    break
                except BrokerStartError as exc:
                    if PORT_CLASH not in str(exc) or attempt == START_ATTEMPTS:
                        raise
                    log.warning("a port was taken before the broker bound it; retrying")
                    self._stop_nodes(grace=0)
        except BaseException:
            self.stop()
            raise
        log.info("Kafka %s (%s) ready at %s", self.version, self.backend, self.bootstrap_servers)
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
                raise BrokerDiedError(
                    f"Kafka broker {node.node_id} exited with code {node.exit_code()}; "
                    f"log {node.log_location}:\n{node.log_tail()}"
                )

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(
            f"--- broker {n.node_id} ({n.log_location}) ---\n{n.log_tail(lines)}"
            for n in self.nodes
        )

    def log_files(self) -> list[str]:
        return [node.log_location for node in self.nodes]

    def __enter__(self) -> Self:
        if not self.nodes:
            self.start()
        return self

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.nodes else "not started"
        name = type(self).__name__
        return f"{name}(kafka {self.version}, {self.brokers} broker(s), {where})"

    def _node_properties(
        self,
        address: broker_config.NodeAddress,
        quorum: list[broker_config.NodeAddress],
        log_dir: str,
    ) -> dict[str, str]:
        return broker_config.node_properties(address, quorum, log_dir, self.overrides)

    def _addresses(self) -> list[broker_config.NodeAddress]:
        ports = free_ports(2 * self.brokers)
        return [
            broker_config.NodeAddress(i + 1, ports[2 * i], ports[2 * i + 1])
            for i in range(self.brokers)
        ]

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        admin: AdminClient | None = None
        while True:
            for node in self.nodes:
                if not node.alive():
                    tail = node.log_tail()
                    raise BrokerStartError(
                        f"Kafka {self.version} broker {node.node_id} ({self.backend}) exited with "
                        f"code {node.exit_code()} while starting; {refused_config(tail)}"
                        f"log {node.log_location}:\n{tail}"
                    )
            if admin is None and all(accepts_connections(n.port) for n in self.nodes):
                admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
            if admin is not None and self._lists_every_broker(admin):
                return
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"Kafka {self.version} ({self.backend}) did not answer a metadata request "
                    f"listing all {self.brokers} broker(s) within {timeout:.0f}s:\n"
                    f"{self.log_tail()}"
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
