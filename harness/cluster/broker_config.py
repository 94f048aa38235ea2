"""``server.properties`` for embedded KRaft nodes: test-friendly defaults plus overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: Keys the harness sets itself because they wire the nodes together.
RESERVED_KEYS = frozenset(
    {
        "process.roles",
        "node.id",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "inter.broker.listener.name",
        "listener.security.protocol.map",
        "log.dirs",
        "log.dir",
    }
)


def test_defaults(brokers: int) -> dict[str, str]:
    """Defaults that make a small local cluster start fast and behave like production otherwise.

    Internal topics get a replication factor the cluster can satisfy, the first group join is
    not delayed, internal topics have fewer partitions so they are created quickly, and a
    transaction that outlived its timeout is aborted within a second of it, not ten, so a run
    waiting for open transactions to end waits for the timeout alone.
    """
    replicas = str(min(brokers, 3))
    min_isr = str(min(brokers, 2))
    return {
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
        "log.cleaner.dedupe.buffer.size": str(32 * 1024 * 1024),
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    }


def validate_overrides(overrides: Mapping[str, object]) -> dict[str, str]:
    """Overrides as strings; refuses keys the harness must own, naming the key."""
    checked: dict[str, str] = {}
    for key, value in overrides.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"broker config key {key!r} must be a non-empty string")
        if key in RESERVED_KEYS:
            raise ValueError(
                f"broker config key {key!r} is set by the harness (it wires the nodes together) "
                f"and cannot be overridden; reserved keys: {', '.join(sorted(RESERVED_KEYS))}"
            )
        if isinstance(value, bool):
            value = "true" if value else "false"
        checked[key] = str(value)
    return checked


@dataclass(frozen=True)
class NodeAddress:
    """Where a node listens: its own port, its controller port and, behind a proxy, two more.

    With ``client_port`` and ``proxy_port`` the node also listens for clients on
    ``client_port`` and advertises that listener at ``proxy_port``, where a proxy forwards to
    it; ``port`` stays the direct address of the brokers' own traffic and the harness's
    observers.
    """

    node_id: int
    port: int
    controller_port: int
    client_port: int | None = None
    proxy_port: int | None = None


def node_properties(
    node: NodeAddress,
    quorum: list[NodeAddress],
    log_dir: str,
    overrides: Mapping[str, str],
) -> dict[str, str]:
    """The full config of one combined broker+controller node."""
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in quorum)
    listeners = [f"PLAINTEXT://127.0.0.1:{node.port}"]
    advertised = list(listeners)
    protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
    if node.client_port is not None and node.proxy_port is not None:
        listeners.append(f"CLIENT://127.0.0.1:{node.client_port}")
        advertised.append(f"CLIENT://127.0.0.1:{node.proxy_port}")
        protocols.append("CLIENT:PLAINTEXT")
    wiring = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{node.controller_port}"]),
        "advertised.listeners": ",".join(advertised),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": ",".join(protocols),
        "log.dirs": log_dir,
    }
    return {**test_defaults(len(quorum)), **overrides, **wiring}


def render_properties(properties: Mapping[str, str]) -> str:
    """Java ``.properties`` text, escaped so any key or value survives the round trip."""

    def escape(text: str, is_key: bool) -> str:
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if is_key:
            for char in " :=#!":
                text = text.replace(char, "\\" + char)
        return text

    return "".join(f"{escape(k, True)}={escape(v, False)}\n" for k, v in properties.items())
