"""A Kafka-compatible broker from another vendor: Tansu (Apache-2.0, Rust), one process.

Validating a move to a vendor's broker means replaying the same incidents on it. Tansu is
built once from crates.io with the machine's ``cargo`` (``cargo install tansu``, about 15
minutes on two cores), cached beside Kafka's jars, and run on 127.0.0.1 on a free port with
its in-memory storage. What it cannot do is said up front, so an incident that needs it is
reported as not applicable instead of failing for a reason that is not the incident's:

- one broker only (its memory storage lives in one process), so no broker restarts either;
- no broker settings: Tansu has no ``server.properties`` (no group, offset or transaction
  timeouts, no retention); an incident whose essential setting it cannot take does not apply;
- one listener: behind a proxy (network faults) it advertises the proxy, so the harness's
  observers, which reach it through metadata like any client, go through the proxy too;
- no ``__consumer_offsets`` topic: the committed offsets are sampled (see
  :func:`kafka_replay.history.lag.commits_from_samples`); no coordinator log the harness can read,
  so the symptoms measured from one cannot be measured here, and say so;
- group descriptions name no members: an app counts as joined once its group is Stable.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from kafka_replay.servers.built_tools import built_once
from kafka_replay.servers.paths import cache_root
from kafka_replay.servers.process import run_tool

from . import broker_config
from .backends import register_backend
from .embedded import BrokerNode
from .errors import ClusterError
from .nodes import Node, NodeCluster
from .versions import choose_tansu_version

log = logging.getLogger(__name__)

#: A ``tansu`` binary to use instead of building one.
BINARY_ENV = "KAFKA_REPLAY_TANSU"
#: ``memory://`` storage needs this feature (without it Tansu answers ``FeatureNotEnabled``).
FEATURES = "dynostore"
BUILD_TIMEOUT_S = 3600.0
#: The node id Tansu gives itself in metadata (it has no setting for it).
TANSU_NODE_ID = 111
LOG_LEVEL = "warn"


class TansuError(ClusterError):
    """Tansu could not be built or found."""


def tansu_binary(version: str) -> Path:
    """``$KAFKA_REPLAY_TANSU``, or the release built once with ``cargo install`` and cached."""
    binary = _built(version)
    return built_once(binary, BINARY_ENV, lambda path: _build(version, path), TansuError)


def _built(version: str) -> Path:
    return cache_root() / "tansu" / version / "bin" / "tansu"


def _cargo() -> str:
    for cargo in (shutil.which("cargo"), str(Path.home() / ".cargo" / "bin" / "cargo")):
        if cargo and os.access(cargo, os.X_OK):
            return cargo
    raise TansuError(
        "the Tansu backend is built from crates.io with cargo, and there is no cargo here: "
        f"install Rust (rustup, or Debian's cargo), or set {BINARY_ENV} to a tansu binary"
    )


def _build(version: str, binary: Path) -> None:
    cargo = _cargo()
    log.warning("building Tansu %s once with cargo (about 15 minutes on two cores)", version)
    with tempfile.TemporaryDirectory(prefix="kafka-replay-tansu-") as scratch:
        command = [
            cargo,
            "install",
            "tansu",
            "--version",
            version,
            "--locked",
            "--features",
            FEATURES,
            "--root",
            scratch,
        ]
        env = {**os.environ, "CARGO_TARGET_DIR": str(Path(scratch) / "target")}
        what = f"building Tansu {version} (`{' '.join(command[:7])}`)"
        run_tool(command, what, TansuError, BUILD_TIMEOUT_S, env=env)
        shutil.move(str(Path(scratch) / "bin" / "tansu"), binary)


@register_backend
class TansuCluster(NodeCluster):
    """One Tansu broker with in-memory storage; a context manager, or start/stop."""

    backend = "tansu"
    about = "Tansu, another vendor's Kafka-compatible broker, built from crates.io"
    runs_kafka = False
    choose_version = staticmethod(choose_tansu_version)
    takes_broker_settings = False
    has_offsets_topic = False
    lists_group_members = False
    _binary: Path | None = None
    lacks: ClassVar[Mapping[str, str]] = {
        "create_partitions": "Tansu has no CreatePartitions API: a topic keeps its partitions",
        "transaction_admin": "Tansu has no DescribeProducers or WriteTxnMarkers API: a hanging "
        "transaction cannot be found or aborted from outside",
        "restart_brokers": "Tansu keeps its data in the memory of its one process: a restarted "
        "broker would come back empty",
        "share_groups": "Tansu has no share groups (no ShareGroupHeartbeat or ShareFetch API)",
        "retention": "Tansu deletes no records by retention.ms: a topic's log keeps its start",
        "transactions": "Tansu has no EndTxn API: no transaction can commit or abort",
        "compaction": "Tansu compacts no topic: a log with cleanup.policy=compact keeps every "
        "record and every tombstone",
    }

    @classmethod
    def unsupported(cls, brokers: int, network_faults: bool) -> str | None:
        if brokers != 1:
            return (
                f"{brokers} brokers: Tansu's memory storage lives in one process, so it runs "
                "one broker"
            )
        return None

    @classmethod
    def unavailable(cls, version: str) -> str | None:
        if os.environ.get(BINARY_ENV) or _built(version).exists():
            return None
        try:
            _cargo()
        except TansuError as exc:
            return f"{exc} (on Debian: apt-get install cargo)"
        return None

    @property
    def label(self) -> str:
        return f"Tansu {self.version}"

    def coordinator_logs(self) -> list[str]:
        """None: Tansu's log does not say what its coordinators did in Kafka's words."""
        return []

    def _prepare(self) -> None:
        self._binary = tansu_binary(self.version)  # may take a while, once per version

    def _addresses(self) -> list[broker_config.NodeAddress]:
        """Its own id; behind a proxy, its one listener is also the one the proxy forwards to."""
        (address,) = super()._addresses()
        client_port = address.port if address.proxy_port else None
        return [
            broker_config.NodeAddress(
                TANSU_NODE_ID,
                address.port,
                address.controller_port,
                client_port,
                address.proxy_port,
            )
        ]

    def _launch(self, addresses: list[broker_config.NodeAddress]) -> list[Node]:
        assert self.data_dir is not None and self.log_dir is not None and self._binary
        (address,) = addresses
        node_dir = self.data_dir / "node"
        node_dir.mkdir(exist_ok=True)
        node = BrokerNode(address, node_dir, self.log_dir)
        url = f"tcp://127.0.0.1:{address.port}"
        advertised = f"tcp://127.0.0.1:{address.proxy_port or address.port}"
        command = [
            str(self._binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            "--storage-engine",
            "memory://tansu/",
            "--cluster-id",
            self.data_dir.name,
        ]
        # its own directory, so no .env of the user's is read; its log at warnings and errors
        env = {**os.environ, "RUST_LOG": os.environ.get("KAFKA_REPLAY_TANSU_LOG", LOG_LEVEL)}
        node.start(command, True, self.lease, env=env, cwd=node_dir)
        return [node]
