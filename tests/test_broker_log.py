"""The coordinators' log lines about static members, as Kafka 4.4 writes them (pure logic: the
real runs are static-member-bounce's)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_replay.cluster import Cluster
from kafka_replay.history.broker_log import group_events, refused_versions, replica_events
from kafka_replay.judging.refused_versions import refused_counts, refused_reason
from tests.kafka_helpers import eventually

GROUP = "static-member-bounce-808e4720"
COORDINATOR = "[GroupCoordinator id=1 topic=__consumer_offsets partition=5]"
OURS = "orders-7159348d-e130-4d4f-b7c0-a4a3c040102b"
THEIRS = "orders-d27cdad4-39cb-4e55-872d-1ca202f4e614"
CLASSIC = [
    f"[2026-11-25T22:02:33,935] INFO {COORDINATOR} Static member with groupInstanceId=orders and "
    f"unknown member id joins group {GROUP} in Empty state. Created a new member id {OURS} for "
    "this member and added to the group. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
    f"[2026-11-25T22:02:34,956] INFO {COORDINATOR} Request memberId={OURS} for static member with "
    f"groupInstanceId=orders is fenced by existing memberId={THEIRS} during operation heartbeat "
    "(org.apache.kafka.coordinator.group.classic.ClassicGroup)",
    # the same words about another group's members, on the same broker: not this group's
    f"[2026-11-25T22:02:35,001] INFO {COORDINATOR} Request memberId=orders-1{OURS[7:]} for static "
    f"member with groupInstanceId=orders is fenced by existing memberId=orders-2{OURS[7:]} during "
    "operation heartbeat (org.apache.kafka.coordinator.group.classic.ClassicGroup)",
]
CONSUMER_PROTOCOL = [
    f"[2026-11-25T22:03:00,100] INFO [GroupId {GROUP}] Static member Qm9vb3MxMjM0NTY3ODkwMTIz "
    "with instance id orders-1 is fenced by existing member Qm9vb3M5ODc2NTQzMjEwOTg3. "
    "(org.apache.kafka.coordinator.group.GroupMetadataManager)",
    f"[2026-11-25T22:03:01,200] INFO [GroupId {GROUP}] Static member Y2F0czEyMzQ1Njc4OTAxMjM0 "
    "with instance id orders-0 cannot join the group because the instance id is owned by member "
    "ZG9nczEyMzQ1Njc4OTAxMjM0. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
]


def test_a_fenced_static_member_is_found_although_the_line_names_no_group(
    tmp_path: Path,
) -> None:
    log = tmp_path / "broker-1.log"
    log.write_text("\n".join(CLASSIC + CONSUMER_PROTOCOL) + "\n")
    static = [e for e in group_events([log], GROUP) if e["kind"].startswith("static")]
    assert [(e["kind"], e["member"], e["instance_id"], e["by"]) for e in static] == [
        ("static_fenced", OURS, "orders", THEIRS),
        ("static_fenced", "Qm9vb3MxMjM0NTY3ODkwMTIz", "orders-1", "Qm9vb3M5ODc2NTQzMjEwOTg3"),
        ("static_refused", "Y2F0czEyMzQ1Njc4OTAxMjM0", "orders-0", "ZG9nczEyMzQ1Njc4OTAxMjM0"),
    ]
    assert [e["ts"] for e in static] == sorted(e["ts"] for e in static)
    assert group_events([log], "some-other-group") == []


def test_a_leaders_isr_shrinks_and_min_isr_refusals_of_the_run_topics_are_read(
    tmp_path: Path,
) -> None:
    """As Kafka 4.4's Partition and ReplicaManager write them (min-isr-blocked-sends' runs), and
    a refusal as 3.9.2 words it."""
    out = "min-isr-blocked-sends-output-0edb01b3"
    other = "another-run-output-12345678"
    lines = [
        f"[2026-11-26T12:44:56,463] INFO [Partition {out}-1 broker=1] Shrinking ISR from 1,2,3 "
        "to 1,2. Leader: (highWatermark: 38, endOffset: 44). Out of sync replicas: (brokerId: 3, "
        "endOffset: 38, lastCaughtUpTimeMs: 1795697093629). (kafka.cluster.Partition)",
        f"[2026-11-26T12:44:57,120] INFO [Partition {out}-1 broker=1] ISR updated to 2,1  and "
        "version updated to 1 (kafka.cluster.Partition)",
        f"[2026-11-26T12:44:58,941] ERROR [ReplicaManager broker=2] Error processing append "
        f"operation on partition KmlU5mh6Qkur4CrWZwEJ7A:{out}-2 (kafka.server.ReplicaManager)",
        "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR : "
        f"1 is insufficient to satisfy the min.isr requirement of 2 for partition {out}-2, live "
        "replica(s) broker.id are : Set(2)",
        f"[2026-11-26T12:44:58,990] ERROR [ReplicaManager broker=1] Error processing append "
        f"operation on partition {out}-3 (kafka.server.ReplicaManager)",  # as 3.9.2 writes it
        "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR "
        f"Set(1) is insufficient to satisfy the min.isr requirement of 2 for partition {out}-3",
        f"[2026-11-26T12:44:59,000] INFO [Partition {other}-0 broker=1] Shrinking ISR from 1,2 to "
        "1. Leader: (highWatermark: 1, endOffset: 1). (kafka.cluster.Partition)",
    ]
    log = tmp_path / "broker-1.log"
    log.write_text("\n".join(lines) + "\n")
    events = replica_events([log], [out])
    kinds = ["isr_shrink", "not_enough_replicas", "not_enough_replicas"]
    assert [e["kind"] for e in events] == kinds
    assert events[0] | {"ts": 0} == {
        "ts": 0, "kind": "isr_shrink", "topic": out, "partition": 1, "broker": 1,
        "isr_from": [1, 2, 3], "isr_to": [1, 2],
    }  # fmt: skip
    assert [(e["partition"], e["min_isr"]) for e in events[1:]] == [(2, 2), (3, 2)]
    assert events[1]["ts"] > events[0]["ts"]  # the stack trace line takes the ERROR line's time


def test_an_unclean_election_is_read_once_however_many_controllers_logged_it(
    tmp_path: Path,
) -> None:
    """As Kafka 4.4's controllers write it (unclean-leader-election's runs): each controller
    replays the change and logs it; the eligible leader replicas it had are kept (KIP-966),
    which 3.9.2 has none of."""
    topic = "unclean-leader-election-input-e389431d"
    change = (
        f"UNCLEAN partition change for {topic}-0 with topic ID 04DaE5HnSx2KbaRd87RmtA: isr: [] "
        "-> [3], leader: -1 -> 3, leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 1 "
        "-> 2, elr: [2] -> [], lastKnownElr: [2] -> [], partitionEpoch: 2 -> 3 "
        "(org.apache.kafka.controller.ReplicationControlManager)"
    )
    logs = []
    for node, at in ((1, "29,474"), (2, "30,819"), (3, "29,514")):
        log = tmp_path / f"broker-{node}.log"
        log.write_text(f"[2026-11-30T08:31:{at}] INFO [QuorumController id={node}] {change}\n")
        logs.append(log)
    assert replica_events(logs, [], elections=["another-run-input-12345678"]) == []
    (event,) = replica_events(logs, [], elections=[topic])
    assert event | {"ts": 0} == {
        "ts": 0, "kind": "unclean_election", "topic": topic, "partition": 0, "leader": 3,
        "leader_epoch": 2, "isr_before": [], "elr_before": [2],
    }  # fmt: skip
    older = tmp_path / "3.9.2" / "broker-1.log"  # no eligible replicas: the dead leader in sync
    older.parent.mkdir()
    older.write_text(
        f"[2026-11-30T08:50:27,112] INFO [QuorumController id=1] UNCLEAN partition change for "
        f"{topic}-0 with topic ID F9IKBztuRk2wyCF107EkTw: isr: [1] -> [2], leader: -1 -> 2, "
        "leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 1 -> 2, partitionEpoch: 2 -> "
        "3 (org.apache.kafka.controller.ReplicationControlManager)\n"
    )
    (event,) = replica_events([older], [], elections=[topic])
    assert (event["isr_before"], event["elr_before"], event["leader"]) == ([1], None, 2)


def test_the_3x_coordinators_wording_is_read_as_4x_is(tmp_path: Path) -> None:
    """Kafka 3.9's group coordinator names the offsets partition after a generation and a
    member by its whole metadata (lines from rolling-deploy-rebalance-storm on 3.9.2)."""
    group = "rolling-deploy-rebalance-storm-159ac368"
    member = "rdkafka-c98497b0-256a-4b53-b272-5422df7da160"
    coordinator = "INFO [GroupCoordinator 1]:"
    suffix = "(kafka.coordinator.group.GroupCoordinator)"
    log = tmp_path / "broker-1.log"
    log.write_text(
        f"[2026-11-26T14:54:02,548] {coordinator} Preparing to rebalance group {group} in state "
        "PreparingRebalance with old generation 0 (__consumer_offsets-8) (reason: Adding new "
        f"member {member} with group instance id None; client reason: not provided) {suffix}\n"
        f"[2026-11-26T14:54:02,549] {coordinator} Stabilized group {group} generation 1 "
        f"(__consumer_offsets-8) with 1 members {suffix}\n"
        f"[2026-11-26T14:54:09,001] {coordinator} Member MemberMetadata(memberId={member}, "
        "groupInstanceId=None, clientId=rdkafka, clientHost=/127.0.0.1, sessionTimeoutMs=6000, "
        "rebalanceTimeoutMs=300000, supportedProtocols=List(range, roundrobin)) has left group "
        f"{group} through explicit `LeaveGroup`; client reason: not provided {suffix}\n"
        f"[2026-11-26T14:54:09,002] {coordinator} Group {group} with generation 1 is now empty "
        f"(__consumer_offsets-8) {suffix}\n"
    )
    events = group_events([log], group)
    assert [e["kind"] for e in events] == ["rebalance", "stabilized", "leave", "empty"]
    assert (events[0]["generation"], events[1]["members"]) == (0, 1)
    assert (events[2]["member"], events[2]["reason"]) == (member, "not provided")


def test_requests_refused_for_their_version_are_read_once_each(tmp_path: Path) -> None:
    """As Kafka 4.4 writes a refusal: the connection closed, why, then the same again from the
    request's processing (one request, counted once)."""
    why = (
        "org.apache.kafka.common.errors.UnsupportedVersionException: Received request for api "
        "with key 2 (ListOffsets) and unsupported version 0"
    )
    client = "127.0.0.1:44185-127.0.0.1:58912-0-19"
    lines = [
        f"[2026-11-30T05:50:41,529] ERROR Closing socket for {client} because of error "
        "(kafka.network.Processor)", why,
        f"[2026-11-30T05:50:41,530] ERROR Exception while processing request from {client} "
        "(kafka.network.Processor)", why,
    ]  # fmt: skip
    log = tmp_path / "broker-1.log"
    log.write_text("\n".join(lines) + "\n")
    (event,) = refused_versions([log])
    assert {k: v for k, v in event.items() if k != "ts"} == {
        "kind": "refused_version", "api": "ListOffsets", "api_key": 2, "version": 0,
    }  # fmt: skip
    counts = refused_counts([event, event, {**event, "api": "Produce", "version": 1}])
    assert counts == {"ListOffsets v0": 2, "Produce v1": 1}
    assert refused_reason(counts).startswith(
        "the brokers refused the app's client for protocol versions they do not serve: "
        "ListOffsets v0 (2 times), Produce v1 (1 times)"
    )


def test_a_client_older_than_the_broker_supports_is_refused_in_its_log(
    kafka_cluster: Cluster,
) -> None:
    """A client speaking Kafka 0.9's protocol (librdkafka asking no ApiVersions, falling back to
    0.9.0) against the default release: Kafka 4 refuses its Produce v1 (KIP-896) and says so."""
    if kafka_cluster.version is None or kafka_cluster.version.split(".")[0] < "4":
        pytest.skip("Kafka 4 removed these versions; this cluster serves them")
    topic = kafka_cluster.create_topic("old-client", 1)
    started = time.time() - 1  # the broker's log times have milliseconds; ours, more
    old = {"api.version.request": False, "broker.version.fallback": "0.9.0"}
    producer = Producer({**kafka_cluster.client_config(), **old, "message.timeout.ms": 3000})
    producer.produce(topic, b"from the past")
    assert producer.flush(10) == 0  # delivered as failed: refused until it timed out

    def refused() -> list[dict[str, Any]]:
        events = refused_versions(kafka_cluster.log_files())
        return [e for e in events if e["ts"] >= started and e["api"] == "Produce"]

    eventually(lambda: bool(refused()), 30, "the broker's log to name the refusal")
    assert {e["version"] for e in refused()} == {1}
