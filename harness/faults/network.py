"""Network faults between the clients (the app, the workload producer) and each broker.

They act on the proxy the cluster puts in front of every broker (see
:mod:`kafka_replay.cluster.request_proxy`): the brokers advertise their proxy's address, so clients
cannot go around it, while replication, the KRaft quorum and the harness's own observers use
the brokers' direct listeners and see no fault. Which broker is hit is found as for broker
faults (a partition's leader, the active controller, any) or ``all`` of them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from typing import Any

from kafka_replay.cluster.request_proxy import RequestProxyError

from .brokers import BrokerFaultError, RunFaults, find_node

#: How a network fault names its brokers: as broker faults do, or every broker.
NETWORK_ROLES = ("leader", "controller", "any", "all")
#: Which traffic a fault hits: requests to the broker, its answers, or both.
DIRECTIONS = ("both", "to_broker", "from_broker")


#: Every network fault a step may ask for -> the proxy's toxic that does it (None: the
#: proxy is switched off, closing the broker's connections and refusing new ones).
FAULTS: dict[str, str | None] = {
    "latency": "latency",  # each chunk delayed by latency_ms (+- jitter_ms)
    "bandwidth": "bandwidth",  # at most rate_kb_s kilobytes a second
    "blackhole": "timeout",  # with timeout 0: every byte dropped, connections kept open
    "cut_off": None,
    "reset": "reset_peer",  # a TCP RST on each connection that carries data
}


def toxic_attributes(fault: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The proxy's attributes for ``fault`` from a step's options."""
    if fault == "latency":
        return {"latency": int(options["latency_ms"]), "jitter": int(options["jitter_ms"])}
    if fault == "bandwidth":
        return {"rate": int(options["rate_kb_s"])}
    if fault == "reset":
        return {"timeout": int(options["reset_after_ms"])}
    if fault == "blackhole":
        return {"timeout": 0}  # never closes the connection
    return {}  # cut_off switches the proxy off: nothing to set


class NetworkFaults(RunFaults):
    """The network faults of one run: which are active, so each can be healed."""

    def _start(self) -> None:
        if self.cluster.proxy is None:
            raise BrokerFaultError(
                "network faults need a proxy in front of each broker; this cluster was started "
                "without (a definition with a network step gets one)"
            )
        self.proxy = self.cluster.proxy
        #: Active faults: name -> (node, toxic names or None for a cut-off proxy).
        self.active: dict[str, tuple[int, list[str] | None]] = {}
        self._names = itertools.count(1)

    def nodes(self, role: str, topic: str = "input", partition: int = 0) -> list[int]:
        if role == "all":
            return [node.node_id for node in self.cluster.nodes]
        return [find_node(self.cluster, role, self.rng, self.topics, topic, partition)]

    def start(
        self, fault: str, nodes: list[int], direction: str, attributes: Mapping[str, Any]
    ) -> list[str]:
        """Put ``fault`` on each node's proxy; return the names to :meth:`heal` it by."""
        kind = FAULTS[fault]
        streams = ["to_broker", "from_broker"] if direction == "both" else [direction]
        started = []
        try:
            for node in nodes:
                proxy = self.cluster.proxy_name(node)
                name = f"{fault}-{next(self._names)}"
                if kind is None:
                    self.proxy.set_enabled(proxy, False)
                    self.active[name] = (node, None)
                else:
                    toxics = [f"{name}-{stream}" for stream in streams]
                    for toxic, stream in zip(toxics, streams, strict=True):
                        self.proxy.add_toxic(proxy, toxic, kind, stream, dict(attributes))
                    self.active[name] = (node, toxics)
                started.append(name)
        except RequestProxyError as exc:
            self.heal(started)
            raise BrokerFaultError(str(exc)) from exc
        return started

    def heal(self, names: list[str] | None = None) -> list[int]:
        """End the named faults (every active one by default); return the nodes healed."""
        healed = []
        try:
            for name in list(self.active) if names is None else names:
                node, toxics = self.active.pop(name)
                proxy = self.cluster.proxy_name(node)
                if toxics is None:
                    self.proxy.set_enabled(proxy, True)
                else:
                    for toxic in toxics:
                        self.proxy.remove_toxic(proxy, toxic)
                healed.append(node)
        except RequestProxyError as exc:
            raise BrokerFaultError(str(exc)) from exc
        return sorted(set(healed))

    def play(
        self,
        fault: str,
        target: Mapping[str, Any],
        direction: str,
        attributes: Mapping[str, Any],
        seconds: float | None,
        times: int = 1,
        gap_s: tuple[float, float] = (0.0, 0.0),
    ) -> dict[str, Any]:
        """Start ``fault`` ``times`` times, each for ``seconds`` (None: until healed).

        The target is looked up again for each time: after a reset or a cut-off, leadership
        may have moved. Returns when and where each happened, and the leaders around them.
        """
        before = self.leaders()
        occurrences = []
        for time_index in range(times):
            if time_index and self.stop.wait(self.rng.uniform(*gap_s)):
                break
            nodes = self.nodes(target["role"], target["topic"], target["partition"])
            started = time.time()
            names = self.start(fault, nodes, direction, attributes)
            occurrence: dict[str, Any] = {"nodes": nodes, "started": started}
            if seconds is not None:
                self.stop.wait(seconds)
                self.heal(names)
                occurrence["ended"] = time.time()
            occurrences.append(occurrence)
            if self.stop.is_set():
                break
        return {
            "fault": fault,
            "direction": direction,
            **dict(attributes),
            "occurrences": occurrences,
            "leaders_before": before,
            "leaders_after": self.leaders(),
        }
