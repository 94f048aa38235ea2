"""Broker faults: kill -9, restart, pause and rolling restarts of the nodes the harness runs.

Faults act through the cluster room's node operations (:class:`NodeCluster`) on a real
multi-broker KRaft cluster. Which node is hit is found the way an operator would: the leader of
a partition from a real metadata request, the active controller from what the KRaft quorum
itself logged, or any node chosen with the run's seeded random source. Every fault returns what
it did (when, to which node) and the leaders of the run's partitions before and after, so the
run history shows leadership move.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from kafka_replay.cluster import Cluster
from kafka_replay.cluster.log_end import log_end_offsets
from kafka_replay.cluster.nodes import NODE_REQUEST_TIMEOUT_S, RESTART_GRACE_S, NodeCluster
from kafka_replay.history.consumer_offsets import OFFSETS_TOPIC, coordinator_partition
from kafka_replay.waiting import poll, wait_for

log = logging.getLogger(__name__)
T = TypeVar("T")

#: How a fault names its node: a partition's leader or one of its followers, the active
#: controller, or any node.
ROLES = ("leader", "follower", "controller", "any")
FIND_TIMEOUT_S = 30.0
POLL_S = 0.2
#: A follower's fetch moves the high watermark every 500 ms: looked at far more often.
UNREPLICATED_POLL_S = 0.01
#: How long a kill waits for ``unreplicated`` records on the leader alone before it kills
#: anyway: a partition being written gets there within a few of its followers' fetches, so this
#: is reached only when nothing writes to it (an app that is still starting, or that writes
#: elsewhere), and then the kill can lose nothing either way.
UNREPLICATED_WAIT_S = 30.0
#: How long a leader frozen for the kill is given before it, for a fetch answer it had sent
#: just before the freeze to reach the follower to be elected (which then holds those records).
SETTLE_S = 0.5

#: KRaft's own record of every quorum state change, one line per change in each node's log:
#: ``Completed transition to Leader(... epoch=5 ...) from ...`` or
#: ``Completed transition to FollowerState(... epoch=5, leader=2 ...) from ...``.
_TRANSITION = re.compile(r"Completed transition to (\w+)\((.*)\) from ")
_EPOCH = re.compile(r"\bepoch=(\d+)")
_LEADER_ID = re.compile(r"\bleader=(\d+)")


class BrokerFaultError(RuntimeError):
    """A broker fault could not be done as asked (no such node, no leader, no quorum)."""


def node_cluster(cluster: Cluster) -> NodeCluster:
    """The cluster as one whose nodes the harness runs; refuses others, saying why."""
    if not isinstance(cluster, NodeCluster):
        raise BrokerFaultError(
            f"broker faults need brokers the harness runs (a --kafka-backend); "
            f"{type(cluster).__name__} at {cluster.bootstrap_servers} is not one of them"
        )
    return cluster


def first_answer(
    cluster: NodeCluster,
    ask: Callable[[AdminClient], T | None],
    what: str,
    timeout: float = FIND_TIMEOUT_S,
) -> T:
    """The first answer to ``ask`` from a node that is running and not paused.

    Each try asks one node through a client that knows only that node, so a paused node (its
    sockets open, nobody answering) cannot hold the request up.
    """

    def answered() -> T | None:
        for node_id in cluster.running_ids():
            try:
                answer = ask(cluster.node_admin(node_id))
            except KafkaException:
                continue
            if answer is not None:
                return answer
        return None

    def unanswered() -> str:
        running = cluster.running_ids()
        return f"no running broker answered {what} within {timeout:.0f}s (running: {running})"

    return wait_for(answered, timeout, unanswered, every_s=POLL_S, error=BrokerFaultError)


def cluster_metadata(cluster: NodeCluster, timeout: float = FIND_TIMEOUT_S) -> ClusterMetadata:
    """A metadata answer from a node that is running and not paused."""
    return first_answer(
        cluster,
        lambda admin: admin.list_topics(timeout=NODE_REQUEST_TIMEOUT_S),
        "a metadata request",
        timeout,
    )


def partition_leaders(cluster: NodeCluster, topics: Mapping[str, str]) -> dict[str, int]:
    """``role/partition`` -> leader's node id (-1: no leader) for the run's topics."""
    metadata = cluster_metadata(cluster)
    leaders: dict[str, int] = {}
    for role, name in topics.items():
        topic = metadata.topics.get(name)
        if topic is None:
            continue
        for partition in sorted(topic.partitions):
            leaders[f"{role}/{partition}"] = topic.partitions[partition].leader
    return leaders


def next_leader(cluster: NodeCluster, name: str, partition: int, leader: int) -> int:
    """The replica of topic ``name``'s ``partition`` that Kafka elects if ``leader`` dies: the
    first other one, in the partition's replica order, that is in sync and running (KRaft's
    controller takes the first valid replica of the assignment)."""
    topic = cluster_metadata(cluster).topics.get(name)
    if topic is None or partition not in topic.partitions:
        raise BrokerFaultError(f"the topic {name} has no partition {partition} now")
    running, found = set(cluster.running_ids()), topic.partitions[partition]
    for replica in found.replicas:
        if replica != leader and replica in found.isrs and replica in running:
            return int(replica)
    raise BrokerFaultError(f"{name} [{partition}] has no running in-sync follower to elect")


def partitions_in_sync(cluster: NodeCluster, topics: Mapping[str, str]) -> bool:
    """Whether every partition of the run's topics has every replica in sync."""
    metadata = cluster_metadata(cluster)
    for name in topics.values():
        topic = metadata.topics.get(name)
        if topic is None:
            continue
        for partition in topic.partitions.values():
            if set(partition.isrs) != set(partition.replicas) or partition.leader < 0:
                return False
    return True


def controller_from_logs(logs: Iterable[tuple[int, str]]) -> int | None:
    """The KRaft quorum leader the nodes' own logs show, or None while an election runs.

    The newest epoch any node reached decides: its leader is the node that logged becoming
    ``Leader`` in it, or the ``leader=`` a follower logged for it. Metadata answers cannot say
    this: in KRaft they name a random broker as "controller".
    """
    newest = -1
    leaders: dict[int, int] = {}
    for node_id, text in logs:
        for match in _TRANSITION.finditer(text):
            state, detail = match.group(1), match.group(2)
            epoch_match = _EPOCH.search(detail)
            if epoch_match is None:
                continue
            epoch = int(epoch_match.group(1))
            newest = max(newest, epoch)
            if state in ("Leader", "LeaderState"):
                leaders[epoch] = node_id
            elif state.startswith("Follower") and (found := _LEADER_ID.search(detail)):
                leaders.setdefault(epoch, int(found.group(1)))
    return leaders.get(newest)


def controller_now(cluster: NodeCluster) -> int | None:
    """The active controller the nodes' logs name now; None during an election (or on a
    broker whose logs never name one, such as Tansu)."""
    return controller_from_logs((n.node_id, n.log_text()) for n in cluster.nodes)


def active_controller(cluster: NodeCluster, timeout: float = FIND_TIMEOUT_S) -> int:
    """The active controller's node id, waiting out an election under way."""
    missing = f"no KRaft quorum leader in the brokers' logs after {timeout}s"
    return wait_for(
        lambda: controller_now(cluster), timeout, missing, every_s=POLL_S, error=BrokerFaultError
    )


def find_node(
    cluster: NodeCluster,
    role: str,
    rng: random.Random,
    topics: Mapping[str, str],
    topic: str = "input",
    partition: int = 0,
    spare: Collection[int] = (),
) -> int:
    """The node id that ``role`` names now (see :data:`ROLES`), never one in ``spare``.

    A spared leader passes the fault on to the leader of the topic's next partition, so the
    fault still hits the topic while the spared nodes (those holding a group's offsets) serve.
    A follower is one of the partition's replicas other than its leader, running, chosen with
    ``rng``: a second follower fault on the same partition hits the other follower, so the
    partition loses two replicas, whatever the placement; a partition with a spared follower
    passes the fault on to the next partition.
    """
    if role == "controller":
        if spare:
            raise BrokerFaultError("the active controller is one node; it cannot be spared")
        return active_controller(cluster)
    if role == "any":
        running = sorted(set(cluster.running_ids()) - set(spare))
        if not running:
            spared = f" once {sorted(spare)} are spared" if spare else ""
            raise BrokerFaultError(f"no broker is running to choose from{spared}")
        return rng.choice(running)
    if role not in ("leader", "follower"):
        raise BrokerFaultError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    if topic not in topics:
        raise BrokerFaultError(f"this run has no {topic} topic; it has {', '.join(topics)}")
    if role == "follower":
        return _follower(cluster, rng, topic, topics[topic], partition, spare)
    leaders = partition_leaders(cluster, {topic: topics[topic]})
    if f"{topic}/{partition}" not in leaders:
        raise BrokerFaultError(f"the {topic} topic has no partition {partition}")
    count = len(leaders)
    for candidate in [(partition + step) % count for step in range(count)]:
        leader = leaders[f"{topic}/{candidate}"]
        if leader < 0:
            raise BrokerFaultError(f"partition {candidate} of the {topic} topic has no leader now")
        if leader not in spare:
            return leader
    raise BrokerFaultError(
        f"every partition of the {topic} topic is led by a spared broker ({sorted(spare)})"
    )


def led_partition(leaders: Mapping[str, int], topic: str, partition: int, node: int) -> int:
    """The partition of ``topic`` whose leader :func:`find_node` chose in ``node``: ``partition``
    itself, or the next one ``node`` leads when a spared leader passed the fault on.
    ``leaders``: ``{"topic/partition": node}``, as :meth:`BrokerFaults.leaders` reads them."""
    count = sum(1 for where in leaders if where.startswith(f"{topic}/"))
    for step in range(count):
        candidate = (partition + step) % count
        if leaders.get(f"{topic}/{candidate}") == node:
            return candidate
    raise BrokerFaultError(f"broker {node} leads no partition of the {topic} topic now")


def _follower(
    cluster: NodeCluster,
    rng: random.Random,
    topic: str,
    name: str,
    partition: int,
    spare: Collection[int],
) -> int:
    """A running replica of the partition other than its leader, chosen with ``rng``.

    A partition with a spared follower passes the fault on to the topic's next partition, so
    two follower faults with the same spared nodes hit the same partition's two followers.
    """
    found = cluster_metadata(cluster).topics.get(name)
    if found is None or partition not in found.partitions:
        raise BrokerFaultError(f"the {topic} topic has no partition {partition}")
    count = len(found.partitions)
    for candidate in [(partition + step) % count for step in range(count)]:
        replicas = found.partitions[candidate]
        followers = set(replicas.replicas) - {replicas.leader}
        if followers & set(spare):
            continue
        running = set(cluster.running_ids())
        if not followers & running:
            raise BrokerFaultError(
                f"partition {candidate} of the {topic} topic has no follower left to fault: "
                f"replicas {sorted(replicas.replicas)}, leader {replicas.leader}, running "
                f"{sorted(running)}"
            )
        return rng.choice(sorted(followers & running))
    raise BrokerFaultError(
        f"every partition of the {topic} topic has a spared follower ({sorted(spare)})"
    )


def group_coordinator(cluster: NodeCluster, group: str, timeout: float = FIND_TIMEOUT_S) -> int:
    """The node id of the consumer group's coordinator, as DescribeGroups names it."""

    def ask(admin: AdminClient) -> int | None:
        futures = admin.describe_consumer_groups([group], request_timeout=NODE_REQUEST_TIMEOUT_S)
        coordinator = futures[group].result().coordinator
        return coordinator.id if coordinator is not None and coordinator.id >= 0 else None

    return first_answer(cluster, ask, f"which broker coordinates group {group}", timeout)


def group_offsets_holders(cluster: NodeCluster, group: str) -> set[int]:
    """The brokers a commit of ``group`` waits for: its coordinator and every replica of the
    ``__consumer_offsets`` partition that holds its offsets (a commit is written with acks=all)."""
    coordinator = group_coordinator(cluster, group)
    topic = cluster_metadata(cluster).topics.get(OFFSETS_TOPIC)
    if topic is None:
        return {coordinator}
    partition = topic.partitions[coordinator_partition(group, len(topic.partitions))]
    return {coordinator, *partition.replicas}


class RunFaults:
    """What a run's faults act on: brokers the harness runs, the run's topics (to find leaders
    and report them), its seeded random source, and the event that stops the run."""

    def __init__(
        self,
        cluster: Cluster,
        topics: Mapping[str, str],
        rng: random.Random,
        stop: threading.Event | None = None,
    ) -> None:
        self.cluster = node_cluster(cluster)
        self.topics = dict(topics)
        self.rng = rng
        self.stop = stop or threading.Event()
        self._start()

    def _start(self) -> None:
        """What a kind of fault sets up (or refuses) before the first one is done."""

    def leaders(self) -> dict[str, int]:
        return partition_leaders(self.cluster, self.topics)


class BrokerFaults(RunFaults):
    """The broker faults of one run: what it took down, to restart and restore at the end."""

    def _start(self) -> None:
        #: Nodes this run killed or stopped and has not restarted, the latest last.
        self.down: list[int] = []

    def kill(
        self,
        role: str,
        topic: str = "input",
        partition: int = 0,
        timeout: float = 60.0,
        spare: Collection[int] = (),
        when: Callable[[int], object] | None = None,
    ) -> dict[str, Any]:
        """SIGKILL the node ``role`` names; wait until Kafka moves leadership off it.

        ``when``: called with the node's id and waited for between finding the node and the
        signal, so the kill lands as soon as it returns (no lookups between)."""
        node = find_node(self.cluster, role, self.rng, self.topics, topic, partition, spare)
        before = self.leaders()
        controller = active_controller(self.cluster) if role == "controller" else None
        if when is not None:
            when(node)
        killed = time.time()
        self.cluster.kill_node(node)
        self.down.append(node)
        quorum = self.has_quorum()
        moved = quorum and self._until(lambda: node not in self.leaders().values(), timeout)
        found: dict[str, Any] = {
            "node": node,
            "killed": killed,
            "leaders_before": before,
            "leaders_after": self.leaders(),
            "leadership_moved_s": round(time.time() - killed, 2) if moved else None,
            **({"spared": sorted(spare)} if spare else {}),
            **({} if quorum else {"quorum": False}),
        }
        if controller is not None:
            found["controller_before"] = controller
            after = self._new_controller(controller, timeout) if quorum else None
            found["controller_after"] = after
        return found

    def has_quorum(self) -> bool:
        """Whether a majority of the nodes (each a KRaft controller too) runs: without one no
        leadership moves until a node comes back, so a kill does not wait for it."""
        return 2 * len(self.cluster.running_ids()) > len(self.cluster.nodes)

    def kill_all(self) -> list[int]:
        """SIGKILL every node at once, as when the cluster's whole site is lost; their ids."""
        nodes = [node.node_id for node in self.cluster.nodes if node.alive()]
        for node in nodes:
            self.cluster.kill_node(node)
            self.down.append(node)
        return nodes

    def freeze_unreplicated(
        self, node: int, topic: str, partition: int, count: int, check: Callable[[], None]
    ) -> int:
        """Freeze ``node``, the leader of the run's ``topic`` partition ``partition``, once
        ``count`` of its records are in its log and not in the follower Kafka would elect in its
        place (:func:`next_leader`), and return how many; or return whatever there is when
        :data:`UNREPLICATED_WAIT_S` passed. ``check`` is called on each look (it raises to stop).

        Both are asked for their own log end (:mod:`kafka_replay.cluster.log_end`), so who wrote
        the records does not matter. A follower's fetch waits at the leader and is answered with
        everything written meanwhile: counted at any moment, the records may be in an answer
        about to leave. A frozen leader answers nothing more, so the count holds once the
        follower is seen not to have taken them after :data:`SETTLE_S` (an answer already sent
        has arrived by then); if it took them, the leader runs again and the wait goes on. The
        kill must follow at once (a frozen process dies of SIGKILL). The high watermark would
        not do: it is the slowest follower's, and the elected one may be faster.
        """
        led = led_partition(self.leaders(), topic, partition, node)
        name = self.topics[topic]
        heir = next_leader(self.cluster, name, led, node)

        def log_end(of: int) -> int:
            port = self.cluster.node(of).address.port
            return log_end_offsets("127.0.0.1", port, name, [led])[led]

        def frozen_ahead() -> int | None:
            """The records the frozen leader holds above the heir, once there are ``count``."""
            check()
            copied = log_end(heir)
            written = log_end(node)
            if written - copied < count:
                return None
            self.cluster.pause_node(node)
            try:
                time.sleep(SETTLE_S)  # a fetch answer already on its way arrives
                above = written - log_end(heir)
            except BaseException:
                self.cluster.resume_node(node)
                raise
            if above >= count:
                return above
            self.cluster.resume_node(node)
            return None

        above = poll(frozen_ahead, UNREPLICATED_WAIT_S, every_s=UNREPLICATED_POLL_S)
        return above if above is not None else max(log_end(node) - log_end(heir), 0)

    def restart(
        self, node: int | None = None, timeout: float = 120.0, first: bool = False
    ) -> dict[str, Any]:
        """Start a node this run took down (the latest by default, the earliest still down
        with ``first``); wait until it serves."""
        if node is None:
            if not self.down:
                raise BrokerFaultError("no broker was killed or stopped earlier in this run")
            node = self.down[0] if first else self.down[-1]
        if self.cluster.node(node).alive():
            raise BrokerFaultError(f"broker {node} is running; there is nothing to restart")
        before = self.leaders()
        started = time.time()
        self.cluster.start_node(node, timeout)
        if node in self.down:
            self.down.remove(node)
        return {
            "node": node,
            "restarted": started,
            "serving_s": round(time.time() - started, 2),
            "leaders_before": before,
            "leaders_after": self.leaders(),
        }

    def pause(
        self, role: str, topic: str = "input", partition: int = 0, spare: Collection[int] = ()
    ) -> tuple[int, dict[str, Any]]:
        """SIGSTOP the node ``role`` names; :meth:`resume` must follow (see :meth:`hold`).

        The record names the active controller too: freezing it stalls every change of
        in-sync replicas until the brokers give up on it (``controller.socket.timeout.ms``).
        """
        node = find_node(self.cluster, role, self.rng, self.topics, topic, partition, spare)
        before = self.leaders()
        controller = controller_now(self.cluster)
        paused = time.time()
        self.cluster.pause_node(node)
        found = {"node": node, "paused": paused, "leaders_before": before, "controller": controller}
        return node, {**found, **({"spared": sorted(spare)} if spare else {})}

    def hold(self, node: int, seconds: float) -> dict[str, Any]:
        """Keep ``node`` paused for ``seconds`` (less if the run stops), then resume it.

        ``leaders_paused`` is None when no broker was left running to ask (a one-broker cluster).
        """
        try:
            self.stop.wait(seconds)
            during = self.leaders() if self.cluster.running_ids() else None
        finally:
            self.cluster.resume_node(node)
        resumed = time.time()
        return {"resumed": resumed, "leaders_paused": during, "leaders_after": self.leaders()}

    def rolling_restart(self, between_s: float = 0.0, timeout: float = 120.0) -> dict[str, Any]:
        """SIGTERM each node in turn, start it again, wait until it serves and is in sync.

        The active controller goes last, as operators do, so the quorum elects once.
        """
        down = [n.node_id for n in self.cluster.nodes if not n.alive() or n.paused]
        if down:
            raise BrokerFaultError(
                f"a rolling restart needs every broker running; {down} are not "
                "(restart_broker first)"
            )
        before = self.leaders()
        controller = active_controller(self.cluster)
        order = sorted(n.node_id for n in self.cluster.nodes if n.node_id != controller)
        nodes = []
        for position, node in enumerate([*order, controller]):
            if position and self.stop.wait(between_s):
                break
            stopped = time.time()
            self.cluster.stop_node(node, RESTART_GRACE_S)
            self.cluster.start_node(node, timeout)
            serving = time.time()
            in_sync = self._until(lambda: partitions_in_sync(self.cluster, self.topics), timeout)
            nodes.append(
                {
                    "node": node,
                    "stopped": stopped,
                    "serving_s": round(serving - stopped, 2),
                    "in_sync": in_sync,
                }
            )
            if not in_sync:
                raise BrokerFaultError(
                    f"after restarting broker {node}, the run's partitions were not all in sync "
                    f"within {timeout:.0f}s; stopping the rolling restart there"
                )
        return {"nodes": nodes, "leaders_before": before, "leaders_after": self.leaders()}

    def restore(self) -> list[int]:
        """Resume and restart whatever the run left down, so the cluster can be reused."""
        restored = self.cluster.restore()
        self.down.clear()
        return restored

    def _new_controller(self, old: int, timeout: float) -> int | None:
        found: list[int] = []

        def elected() -> bool:
            leader = controller_now(self.cluster)
            if leader is not None and leader != old:
                found.append(leader)
            return bool(found)

        return found[-1] if self._until(elected, timeout) else None

    def _until(self, condition: Any, timeout: float) -> bool:
        return poll(condition, timeout, every_s=POLL_S, stop=self.stop) is not None
