"""Replicas falling out of sync, and the unclean election that makes one of them leader.

An unclean election is the way back for a partition whose in-sync replicas are all gone: a
replica that fell behind is made leader, and what only the dead ones held is truncated when
they return. Kafka does it on its own only with ``unclean.leader.election.enable``, and under
KRaft a setting changed at run time is acted on at the controller's periodic check (minutes);
here it is asked for, as an operator does with ``kafka-leader-election.sh --election-type
unclean`` (the Admin API's ``electLeaders``), once the partition has no leader and a replica
outside its in-sync set runs: each moment is polled for, never waited out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import PartitionMetadata

from kafka_replay.cluster.nodes import NODE_REQUEST_TIMEOUT_S, NodeCluster
from kafka_replay.waiting import poll, wait_for

from .brokers import POLL_S, BrokerFaultError, cluster_metadata


def partition_state(cluster: NodeCluster, name: str, partition: int) -> PartitionMetadata:
    """The partition as a running node's metadata has it now (leader, replicas, in sync)."""
    topic = cluster_metadata(cluster).topics.get(name)
    if topic is None or partition not in topic.partitions:
        raise BrokerFaultError(f"the topic {name} has no partition {partition} now")
    return topic.partitions[partition]


def describe(state: PartitionMetadata, running: list[int]) -> str:
    leader = state.leader if state.leader >= 0 else "none"
    return (
        f"leader {leader}, replicas {list(state.replicas)}, in sync {list(state.isrs)}, "
        f"brokers running {running}"
    )


def wait_out_of_sync(
    cluster: NodeCluster,
    name: str,
    partition: int,
    node: int,
    timeout: float,
    stop: threading.Event,
) -> dict[str, Any]:
    """Wait until ``node`` is no longer among the partition's in-sync replicas: the leader
    then acknowledges writes ``node`` never copies (with ``acks=all`` too, when
    ``min.insync.replicas`` lets the smaller set do)."""
    state = partition_state(cluster, name, partition)
    if node not in state.replicas:
        raise BrokerFaultError(
            f"broker {node} holds no replica of {name} [{partition}] "
            f"({describe(state, cluster.running_ids())})"
        )
    started = time.monotonic()
    state = _until(
        cluster,
        name,
        partition,
        lambda s: node not in s.isrs,
        started + timeout,
        stop,
        f"broker {node} was still in sync for {name} [{partition}] after {timeout:.0f}s",
    )
    return {
        "node": node,
        "isr": list(state.isrs),
        "leader": state.leader,
        "out_of_sync_s": round(time.monotonic() - started, 2),
    }


def elect_unclean(
    cluster: NodeCluster, name: str, partition: int, timeout: float, stop: threading.Event
) -> dict[str, Any]:
    """Once the partition has no leader and a replica outside its in-sync set runs, elect one
    uncleanly; wait until a leader is named.

    Fails, saying what the partition looks like, when that moment does not come within
    ``timeout`` (a leader came back, or no out-of-sync replica runs), or the controller
    refuses."""
    started = time.monotonic()
    deadline = started + timeout

    def electable(state: PartitionMetadata) -> list[int]:
        running = cluster.running_ids()
        return [r for r in state.replicas if r not in state.isrs and r in running]

    state = _until(
        cluster,
        name,
        partition,
        lambda s: s.leader < 0 and bool(electable(s)),
        deadline,
        stop,
        f"{name} [{partition}] had a leader, or no running replica out of sync, for "
        f"{timeout:.0f}s: nothing to elect uncleanly",
    )
    before = {
        "replicas": list(state.replicas),
        "isr_before": list(state.isrs),
        "out_of_sync": electable(state),
    }
    asked = time.monotonic()
    _ask_election(cluster, name, partition, deadline)
    state = _until(
        cluster,
        name,
        partition,
        lambda s: s.leader >= 0,
        deadline,
        stop,
        f"the unclean election of {name} [{partition}] was taken, and no leader was named "
        f"within {timeout:.0f}s",
    )
    return {
        "partition": partition,
        **before,
        "elected": state.leader,
        "isr_after": list(state.isrs),
        "leaderless_s": round(asked - started, 2),
        "elected_s": round(time.monotonic() - asked, 2),
    }


def _until(
    cluster: NodeCluster,
    name: str,
    partition: int,
    holds: Callable[[PartitionMetadata], bool],
    deadline: float,
    stop: threading.Event,
    late: str,
) -> PartitionMetadata:
    """The partition once ``holds`` is true of it, polled; past ``deadline`` (or when the run
    stops) fails with ``late`` and what the partition looks like."""
    state = None

    def held() -> PartitionMetadata | None:
        nonlocal state
        state = partition_state(cluster, name, partition)
        return state if holds(state) else None

    found = poll(held, deadline - time.monotonic(), every_s=POLL_S, stop=stop)
    if found is None:
        why = late if not stop.is_set() else "the run stopped first"
        raise BrokerFaultError(f"{why} ({describe(state, cluster.running_ids())})")
    return found


def _ask_election(cluster: NodeCluster, name: str, partition: int, deadline: float) -> None:
    """``electLeaders(UNCLEAN)`` through a running node (a client told of every node may wait
    on a dead one it takes for the controller), asked again while the controller is not
    ready; a refusal for the partition itself is raised, but for "not needed" (a request
    asked again after the first was done)."""
    wanted = TopicPartition(name, partition)
    last: Exception | None = None

    def taken() -> bool:
        nonlocal last
        last = None
        for node in cluster.running_ids():
            admin = cluster.node_admin(node)
            try:
                answers = admin.elect_leaders(ElectionType.UNCLEAN, [wanted]).result(
                    timeout=NODE_REQUEST_TIMEOUT_S
                )
            except (KafkaException, TimeoutError) as exc:
                last = exc
                continue
            error = next(iter(answers.values()), None)
            if error is not None and error.code() != KafkaError.ELECTION_NOT_NEEDED:
                raise BrokerFaultError(
                    f"the controller refused the unclean election of {name} [{partition}]: {error}"
                )
            return True
        return False

    wait_for(
        taken,
        deadline - time.monotonic(),
        lambda: f"no running broker took the unclean election of {name} [{partition}]: {last}",
        every_s=POLL_S,
        error=BrokerFaultError,
    )
