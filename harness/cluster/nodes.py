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
from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Protocol, Self

import psutil
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kafka_replay.servers.ports import accepts_connections, free_ports
from kafka_replay.servers.reaper import Lease, reap_orphans
from kafka_replay.waiting import wait_for

from . import broker_config
from .base import Cluster
from .broker_config import validate_overrides
from .errors import BrokerDiedError, BrokerStartError
from .request_proxy import RequestProxy
from .versions import choose_version, parse_version

log = logging.getLogger(__name__)

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
PORT_CLASH = "Address already in use"
START_ATTEMPTS = 3
#: How long a node stopped for a restart gets to shut down cleanly (it moves its leaderships).
RESTART_GRACE_S = 30.0
#: How long one metadata request to one node may take before that node counts as not serving.
NODE_REQUEST_TIMEOUT_S = 3.0
#: Below this much free space where a node keeps its data or logs, it is not started.
MIN_FREE_BYTES = 64 * 2**20


#: The first release whose formatter takes the feature levels a definition may choose
#: (``transaction.version`` among them); 3.9's knows only level 0 of each.
FEATURE_LEVELS_SINCE = (4, 0)


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
    def log_text(self) -> str: ...
    @property
    def paused(self) -> bool: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def restart(self) -> None: ...
    def release(self) -> None: ...


class AddressedNode:
    """What names a node, however it runs: its address (node id, ports)."""

    address: broker_config.NodeAddress

    @property
    def node_id(self) -> int:
        return self.address.node_id

    @property
    def port(self) -> int:
        return self.address.port


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


def listening_ports(node: Node) -> list[int]:
    """The TCP ports a node's own process listens on (none known for a container's)."""
    process = getattr(node, "process", None)
    if process is None:
        return []
    try:
        connections = psutil.Process(process.pid).net_connections(kind="tcp")
    except psutil.Error:
        return []
    return sorted({c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN})


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


class NodeCluster(Cluster):
    """``brokers`` KRaft nodes started by the harness; a context manager, or start/stop."""

    #: The backend's name (``--kafka-backend NAME``) and one line about it, for help and docs.
    backend: ClassVar[str | None] = "?"
    about: ClassVar[str] = ""
    #: True: it runs Apache Kafka at the release ``--kafka-version`` picks. False: it runs its
    #: own releases, named as ``NAME:VERSION`` and chosen by :meth:`choose_version`.
    runs_kafka: ClassVar[bool] = True
    #: How the release a backend runs is chosen: Apache Kafka's, unless a backend says otherwise.
    choose_version = staticmethod(choose_version)

    #: Keywords of its own that its constructor takes from :meth:`create` (``image``, say).
    options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def create(
        cls,
        version: str | None,
        brokers: int,
        broker_config: Mapping[str, object] | None,
        work_dir: Path | None,
        network_faults: bool = False,
        features: Mapping[str, int] | None = None,
        **options: object,
    ) -> Self:
        """An unstarted cluster, given those of ``options`` it takes (see :attr:`options`)."""
        own = {key: value for key, value in options.items() if key in cls.options}
        return cls(
            version,
            brokers,
            broker_config,
            work_dir,
            network_faults=network_faults,
            features=features,
            **own,  # type: ignore[arg-type]
        )

    def __init__(
        self,
        version: str | None = None,
        brokers: int = 1,
        broker_config: Mapping[str, object] | None = None,
        work_dir: Path | None = None,
        network_faults: bool = False,
        features: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__()
        if brokers < 1:
            raise ValueError(f"brokers must be at least 1, got {brokers}")
        problem = self.unsupported(brokers, network_faults)
        if problem:
            raise ValueError(f"{self.backend}: {problem}")
        self.version = self.choose_version(version)
        refused = self.features_refused(self.version) if features else None
        if refused:
            raise ValueError(f"{self.backend}: feature levels cannot be chosen: {refused}")
        self.features = dict(features or {})
        self.brokers = brokers
        self.overrides = validate_overrides(broker_config or {})
        self._work_dir = Path(work_dir) if work_dir else None
        #: Clients reach each node through its own proxy (see :mod:`.request_proxy`).
        self.network_faults = network_faults
        self.proxy: RequestProxy | None = None
        self.nodes: list[Node] = []
        self._lease: Lease | None = None
        self.data_dir: Path | None = None
        self.log_dir: Path | None = None

    # --- what a backend provides ----------------------------------------------------------

    @classmethod
    def features_refused(cls, version: str | None) -> str | None:
        if not cls.runs_kafka:
            return f"{cls.backend} has no Kafka feature levels"
        if version is None or parse_version(version)[:2] < FEATURE_LEVELS_SINCE:
            return (
                f"Kafka {version} takes feature levels at format from 4.0 on; an older release "
                "runs the levels it has"
            )
        return None

    @classmethod
    def unavailable(cls, version: str) -> str | None:
        """Why this backend cannot run ``version`` on this machine (a tool or daemon it needs
        is missing), with how to get it; None when it can. Quick: nothing is built or fetched."""
        return None

    @classmethod
    def fetch(cls, version: str) -> None:
        """Fetch what starting ``version`` needs, once, so a release that cannot be had fails
        before any run (raises :class:`~.errors.ArtifactResolutionError`)."""

    def _prepare(self) -> None:
        """Slow one-time work before the lease is taken (resolving jars, finding an image)."""

    @abstractmethod
    def _launch(self, addresses: list[broker_config.NodeAddress]) -> list[Node]:
        """Start one node per address (their configs from :meth:`_node_properties`)."""

    # --- shared ---------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return f"Kafka {self.version} ({self.backend})"

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

    @property
    def client_bootstrap_servers(self) -> str:
        """Through each node's proxy when the cluster has them, else the direct addresses."""
        if not self.network_faults:
            return self.bootstrap_servers
        if not self.nodes:
            raise RuntimeError("the cluster is not started")
        return ",".join(f"127.0.0.1:{node.address.proxy_port}" for node in self.nodes)

    def proxy_name(self, node_id: int) -> str:
        """The name of the proxy in front of ``node_id`` (a ValueError if there is none)."""
        self.node(node_id)
        if self.proxy is None:
            raise ValueError(
                "this cluster has no proxies in front of its brokers; network faults need a "
                "cluster started with network_faults=True"
            )
        return f"broker-{node_id}"

    def start(self, timeout: float = START_TIMEOUT_S) -> Self:
        """Start every node and wait until all are serving; raise with their log tail if not."""
        if self._lease is not None:  # started, and not stopped since
            return self
        reap_orphans()
        self._prepare()
        self._lease = Lease.take()
        try:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kafka-replay-data-"))
            self._lease.add_dir(self.data_dir)
            self.log_dir = self._work_dir or self.data_dir / "logs"
            self.log_dir.mkdir(parents=True, exist_ok=True)
            check_free_space(self.data_dir.parent, self.log_dir)
            if self.network_faults:
                self.proxy = RequestProxy().start()
            for attempt in range(1, START_ATTEMPTS + 1):
                try:
                    addresses = self._addresses()
                    if self.proxy is not None:
                        self.proxy.route(
                            {
                                f"broker-{a.node_id}": (a.proxy_port, a.client_port)
                                for a in addresses
                                if a.proxy_port and a.client_port
                            }
                        )
                    self.nodes = self._launch(addresses)
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
        log.info("%s ready at %s", self.label, self.bootstrap_servers)
        return self

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop every node (SIGTERM, then SIGKILL after ``grace``) and remove the data."""
        self._admin = None
        self._stop_nodes(grace)
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    # --- one node at a time: the faults a run does to brokers --------------------------------

    def node(self, node_id: int) -> Node:
        """The node with this id; a ValueError naming the ids there are otherwise."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        ids = ", ".join(str(n.node_id) for n in self.nodes) or "none (not started)"
        raise ValueError(f"no broker {node_id} in this cluster; its node ids: {ids}")

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would; :meth:`check_alive` does not count it as one."""
        self.node(node_id).kill()

    def stop_node(self, node_id: int, grace: float = RESTART_GRACE_S) -> None:
        """Stop one node cleanly (SIGTERM, SIGKILL after ``grace``), keeping its data."""
        node = self.node(node_id)
        node.terminate()
        node.wait_stopped(grace)

    def start_node(self, node_id: int, timeout: float = START_TIMEOUT_S) -> None:
        """Start a stopped or killed node again with its config and data; wait until it serves."""
        node = self.node(node_id)
        if node.alive():
            raise ValueError(f"broker {node_id} is running; stop or kill it first")
        node.restart()
        self.wait_serving(node_id, timeout)

    def pause_node(self, node_id: int) -> None:
        """Freeze one node (SIGSTOP, or the container's freezer): a long GC pause."""
        node = self.node(node_id)
        if not node.alive():
            raise ValueError(f"broker {node_id} is not running; it cannot be paused")
        node.pause()

    def resume_node(self, node_id: int) -> None:
        """Let a paused node run again (SIGCONT)."""
        self.node(node_id).resume()

    def node_admin(self, node_id: int) -> AdminClient:
        """A client that knows only this node, so only this node answers it."""
        port = self.node(node_id).port
        return AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0})

    def metadata_admins(self) -> list[AdminClient]:
        """One client per node that can answer now."""
        return [self.node_admin(node_id) for node_id in self.running_ids()]

    def running_ids(self) -> list[int]:
        """Nodes whose process runs and is not paused: the ones that can answer now."""
        return [n.node_id for n in self.nodes if n.alive() and not n.paused]

    def wait_serving(self, node_id: int, timeout: float = START_TIMEOUT_S) -> None:
        """Wait until ``node_id`` itself answers a metadata request listing every running node.

        A node counts as serving once Kafka lists it: a restarted broker is fenced (absent from
        metadata) until it has caught up with the controller and registered again.
        """
        node = self.node(node_id)
        listed: set[int] | None = None

        def serving() -> bool:
            nonlocal listed
            if not node.alive():
                raise self._exited(node, "restarting")
            listed = self.brokers_seen_by(node_id) if accepts_connections(node.port) else None
            return listed is not None and set(self.running_ids()) <= listed

        def not_serving() -> str:
            return (
                f"Kafka broker {node_id} ({self.backend}) did not serve again within "
                f"{timeout:.0f}s (its metadata listed {sorted(listed or [])}, running: "
                f"{self.running_ids()}); log {node.log_location}"
            )

        wait_for(
            serving, timeout, not_serving, every_s=0.2, tail=node.log_tail, error=BrokerStartError
        )

    def brokers_seen_by(self, node_id: int) -> set[int] | None:
        """The broker ids in a metadata answer from ``node_id`` itself; None if it did not answer.

        A fresh client knowing only that node sends its first request there, so the answer is
        that node's own view (a paused or starting node does not give one).
        """
        admin = AdminClient(
            {"bootstrap.servers": f"127.0.0.1:{self.node(node_id).port}", "log_level": 0}
        )
        try:
            return set(admin.list_topics(timeout=NODE_REQUEST_TIMEOUT_S).brokers)
        except KafkaException:
            return None

    def needs_restore(self) -> bool:
        """Whether a fault left a node stopped or paused, or a proxy faulty."""
        faulty_network = self.proxy is not None and self.proxy.faulty()
        return faulty_network or any(not n.alive() or n.paused for n in self.nodes)

    def restore(self, timeout: float = START_TIMEOUT_S) -> list[int]:
        """Heal the proxies, resume paused nodes, restart stopped ones; return the node ids.

        What a run's faults left must not reach the next run that reuses the cluster; raises
        :class:`BrokerStartError` when a node cannot be brought back (then discard the cluster).
        """
        if self.proxy is not None:
            self.proxy.reset()
        touched = []
        for node in self.nodes:
            if node.paused:
                node.resume()
                touched.append(node.node_id)
            if not node.alive():
                node.restart()
                touched.append(node.node_id)
        for node_id in dict.fromkeys(touched):
            self.wait_serving(node_id, timeout)
        return list(dict.fromkeys(touched))

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
        per_node = 4 if self.network_faults else 2
        ports = free_ports(per_node * self.brokers)
        return [
            broker_config.NodeAddress(i + 1, *ports[per_node * i : per_node * (i + 1)])
            for i in range(self.brokers)
        ]

    def _wait_ready(self, timeout: float) -> None:
        admin: AdminClient | None = None

        def ready() -> bool:
            nonlocal admin
            for node in self.nodes:
                if not node.alive():
                    raise self._exited(node, "starting")
            if admin is None and all(accepts_connections(n.port) for n in self.nodes):
                admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
            return admin is not None and self._lists_every_broker(admin)

        silent = (
            f"Kafka {self.version} ({self.backend}) did not answer a metadata request listing all "
            f"{self.brokers} broker(s) within {timeout:.0f}s"
        )
        wait_for(ready, timeout, silent, tail=self.log_tail, error=BrokerStartError)

    def _exited(self, node: Node, doing: str) -> BrokerStartError:
        """The error for a node that exited while ``doing``: its exit, Kafka's words, its log."""
        tail = node.log_tail()
        return BrokerStartError(
            f"Kafka {self.version} broker {node.node_id} ({self.backend}) exited with code "
            f"{node.exit_code()} while {doing}; {refused_config(tail)}"
            f"log {node.log_location}:\n{tail}"
        )

    def _lists_every_broker(self, admin: AdminClient) -> bool:
        try:
            metadata = admin.list_topics(timeout=2)
        except KafkaException:
            return False
        return len(metadata.brokers) == self.brokers

    def _stop_nodes(self, grace: float) -> None:
        for node in self.nodes:
            node.terminate()  # a paused node is resumed too, so it can act on the SIGTERM
        for node in self.nodes:
            node.wait_stopped(grace)
            node.release()
