"""The coordinators' log lines about static members, as Kafka 4.4 writes them (pure logic: the
real runs are static-member-bounce's)."""

from __future__ import annotations

from pathlib import Path

from kafka_replay.history.broker_log import group_events

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
