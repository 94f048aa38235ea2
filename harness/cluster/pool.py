"""Share clusters between tests or incidents: one running cluster per distinct configuration."""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka_replay.servers.ports import accepts_connections

from .backends import backend_class, backend_name, backend_version, choose_backend, make_cluster
from .base import Cluster, ClusterFor, ClusterNeeds
from .broker_config import validate_overrides
from .errors import NotApplicable
from .external import ExternalCluster
from .nodes import NodeCluster, listening_ports

log = logging.getLogger(__name__)

#: Clusters kept running at once; the least recently used one is stopped beyond this.
DEFAULT_MAX_LIVE = 3


@dataclass(frozen=True)
class ClusterSpec:
    """What a test or incident needs from Kafka; equal specs share one cluster."""

    version: str
    brokers: int = 1
    broker_config: tuple[tuple[str, str], ...] = field(default=())
    backend: str = "embedded"
    #: A proxy in front of each broker, for network faults.
    network_faults: bool = False
    #: Feature levels its storage is formatted with (``[features]``), over the release's own.
    features: tuple[tuple[str, int], ...] = field(default=())

    @classmethod
    def of(
        cls,
        version: str | None = None,
        brokers: int = 1,
        broker_config: Mapping[str, object] | None = None,
        backend: str | None = None,
        network_faults: bool = False,
        features: Mapping[str, int] | None = None,
    ) -> ClusterSpec:
        overrides = tuple(sorted(validate_overrides(broker_config or {}).items()))
        backend = choose_backend(backend)
        version = backend_version(backend, version)
        levels = tuple(sorted((features or {}).items()))
        return cls(version, brokers, overrides, backend, network_faults, levels)

    @classmethod
    def needed(cls, version: str | None, backend: str | None, needs: ClusterNeeds) -> ClusterSpec:
        """The spec of a run's cluster: this release and backend, with what the run needs."""
        return cls.of(
            version,
            needs.brokers,
            needs.broker_config,
            backend,
            needs.network_faults,
            needs.features,
        )

    def describe(self) -> str:
        config = ", ".join(f"{k}={v}" for k, v in self.broker_config)
        cls = backend_class(self.backend)
        release = f"Kafka {self.version}" if cls.runs_kafka else backend_name(self.backend)
        where = f"{release} ({self.backend}), {self.brokers} broker(s)"
        proxied = ", behind proxies" if self.network_faults else ""
        levels = ", ".join(f"{k}={v}" for k, v in self.features)
        formatted = f", formatted with {levels}" if levels else ""
        return where + proxied + formatted + (f", {config}" if config else "")


class ExternalClusterMismatch(NotApplicable):
    """A spec asks for something an external cluster cannot be made to provide."""


class ClusterPool:
    """Starts clusters on demand and keeps them until :meth:`close`.

    :meth:`get` shares a cluster between everyone asking for its spec; :meth:`borrow` lends one
    to a single run until :meth:`give_back`, starting another of the same spec while it is out
    (a lane checks one run while the next one's steps run on a cluster of their own).

    With ``bootstrap_servers`` set, every request is served by that existing cluster. A request
    a backend cannot serve (a broker configuration for a cluster that takes none, more brokers
    than it runs) raises :class:`NotApplicable`, unless the settings are ``optional``: an
    incident run then goes without them and says so (see :mod:`kafka_replay.playing.runner`).
    """

    def __init__(
        self,
        log_root: Path,
        bootstrap_servers: str | None = None,
        max_live: int = DEFAULT_MAX_LIVE,
        image: str | None = None,
    ) -> None:
        self.log_root = log_root
        self.image = image
        self.max_live = max_live
        self._external = ExternalCluster(bootstrap_servers) if bootstrap_servers else None
        if self._external is not None:
            self._external.check_reachable()  # at once, not at the first topic 30 s later
        #: Running clusters, least recently used first, each with its spec.
        self._live: OrderedDict[NodeCluster, ClusterSpec] = OrderedDict()
        self._lent: set[NodeCluster] = set()
        self._started = 0

    def get(
        self, spec: ClusterSpec, *, default: ClusterSpec | None = None, optional: bool = False
    ) -> Cluster:
        """A running cluster for ``spec``, started now or reused from an earlier request.

        ``optional``: the broker settings may be left out where the backend takes none.
        """
        return self._take(spec, default, optional, lend=False)

    def borrow(
        self, spec: ClusterSpec, *, default: ClusterSpec | None = None, optional: bool = False
    ) -> Cluster:
        """As :meth:`get`, but the cluster is no one else's until :meth:`give_back`."""
        return self._take(spec, default, optional, lend=True)

    def give_back(self, cluster: Cluster) -> None:
        """End a :meth:`borrow`: the cluster may serve the next request of its spec."""
        self._lent.discard(cluster)  # type: ignore[arg-type]

    def _take(
        self, spec: ClusterSpec, default: ClusterSpec | None, optional: bool, lend: bool
    ) -> Cluster:
        if self._external is not None:
            self._check_external(spec, default or spec, optional)
            return self._external
        cls = backend_class(spec.backend)
        problem = cls.unsupported(spec.brokers, spec.network_faults)
        if problem:
            raise NotApplicable(f"needs {problem}")
        if spec.broker_config and not cls.takes_broker_settings:
            if not optional:
                raise NotApplicable(f"needs {_settings(spec)}, which {spec.backend} cannot take")
            spec = dataclasses.replace(spec, broker_config=())
        refused = cls.features_refused(spec.version) if spec.features else None
        if refused:
            if not optional:
                raise NotApplicable(f"needs feature levels {_levels(spec)}: {refused}")
            spec = dataclasses.replace(spec, features=())
        free = [c for c, s in self._live.items() if s == spec and c not in self._lent]
        cluster = free[-1] if free else None
        if cluster is not None and any(node.exited_unexpectedly() for node in cluster.nodes):
            log.warning("a broker of %s died; starting a fresh cluster", spec.describe())
            self._stop(cluster)
            cluster = None
        if cluster is not None and not self._restored(cluster):
            log.warning("a broker of %s could not be restored; starting afresh", spec.describe())
            self._stop(cluster)
            cluster = None
        if cluster is not None and not self._accepting(cluster):
            self._stop(cluster)
            cluster = None
        if cluster is None:
            idle = [c for c in self._live if c not in self._lent]  # a lent one is in use
            while idle and len(self._live) >= self.max_live:
                self._stop(idle.pop(0))
            self._started += 1
            work_dir = self.log_root / f"cluster-{self._started}"
            cluster = make_cluster(
                spec.backend,
                spec.version,
                spec.brokers,
                dict(spec.broker_config),
                work_dir,
                image=self.image,
                network_faults=spec.network_faults,
                features=dict(spec.features),
            ).start()
            self._live[cluster] = spec
        self._live.move_to_end(cluster)
        if lend:
            self._lent.add(cluster)
        return cluster

    def cluster_for(
        self, version: str | None, backend: str | None, lend: bool = False
    ) -> ClusterFor:
        """``cluster_for(needs)``: a run's cluster, of this release and backend; broker
        settings and feature levels the backend or release cannot take are left out (optional).
        ``lend``: each one borrowed (:meth:`borrow`), for its run to give back."""
        default = ClusterSpec.of(version, backend=backend)

        def get(needs: ClusterNeeds) -> Cluster:
            return self._take(ClusterSpec.needed(version, backend, needs), default, True, lend)

        return get

    def close(self) -> None:
        for cluster in list(self._live):
            self._stop(cluster)
        if self._external is not None:
            self._external.stop()

    @staticmethod
    def _restored(cluster: NodeCluster) -> bool:
        """Bring back nodes a run's faults left killed or paused; False if that failed."""
        if not cluster.needs_restore():
            return True
        try:
            cluster.restore()
        except Exception as exc:  # Docker's errors too: any failure means a fresh cluster
            log.warning("restoring %r failed: %s", cluster, exc)
            return False
        return True

    @staticmethod
    def _accepting(cluster: NodeCluster) -> bool:
        """Whether every running node takes connections. A broker restarted by a run was once
        seen running and logging, yet refusing every connection on its port (the cause is not
        known): each run its lane gave that cluster afterwards failed at start-up."""
        running = [node for node in cluster.nodes if node.alive() and not node.paused]
        refusing = [node for node in running if not accepts_connections(node.port)]
        for node in refusing:
            log.warning(
                "broker %s of %r runs but refuses connections on 127.0.0.1:%s (it listens on "
                "%s); starting a fresh cluster",
                node.node_id,
                cluster,
                node.port,
                listening_ports(node) or "no port",
            )
        return not refusing

    def _stop(self, cluster: NodeCluster) -> None:
        del self._live[cluster]
        self._lent.discard(cluster)
        cluster.stop()

    def _check_external(self, spec: ClusterSpec, default: ClusterSpec, optional: bool) -> None:
        wanted = []
        if spec.brokers != 1:
            wanted.append(f"{spec.brokers} brokers")
        if spec.broker_config and not optional:
            wanted.append(_settings(spec))
        if spec.features and not optional:
            wanted.append(f"feature levels {_levels(spec)}")
        if spec.version != default.version:
            wanted.append(f"Kafka {spec.version}")
        if spec.backend != default.backend:
            wanted.append(f"the {spec.backend} backend")
        if spec.network_faults:
            wanted.append("a proxy in front of each broker (network faults)")
        if wanted:
            raise ExternalClusterMismatch(
                f"needs {'; '.join(wanted)}, which an external cluster "
                f"({self._external.bootstrap_servers if self._external else '?'}) cannot provide"
            )


def _levels(spec: ClusterSpec) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec.features)


def _settings(spec: ClusterSpec) -> str:
    return "broker config " + ", ".join(f"{k}={v}" for k, v in spec.broker_config)
