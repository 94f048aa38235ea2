"""Share groups (KIP-932): the JVM admin tool that sees them, the JVM reference app that
replays ``share-group-lock-expiry``, and where such a run does not apply.

The Python app's runs are the definition's own pytest items
(``pytest incidents/share-group-lock-expiry.toml``); the JVM app runs here on kafka-clients
4.4.0, the first release line whose share consumer talks to a 4.2+ broker's share groups.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from kafka_replay.cluster import Cluster
from kafka_replay.cluster.capabilities import lacks_by_version
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.faults.share_group_admin import (
    ShareAdminError,
    ShareGroupWatch,
    configure_share_group,
    describe_share_group,
    done_below,
    share_group_done,
)
from kafka_replay.judging.share_group_reason import archived_reason
from kafka_replay.playing.share_group import lag_rows
from kafka_replay.replay.compare import Setup
from kafka_replay.report.outcome import Outcome
from kafka_replay.waiting import poll

from .kafka_helpers import eventually, produce_acked

JVM_CLIENT = "kafka-clients==4.4.0"
DEFINITION = Path("incidents/share-group-lock-expiry.toml")
Replay = Callable[..., Outcome]


# --- pure logic -------------------------------------------------------------------------------


def _row(start: int, lag: int, end: int, partition: int = 0) -> dict[str, int]:
    return {"partition": partition, "startOffset": start, "lag": lag, "end": end}


def test_the_group_is_done_below_its_start_offset_or_at_the_end_once_its_lag_is_zero() -> None:
    assert done_below(_row(-1, -1, 300)) is None  # no state yet
    assert done_below(_row(120, 180, 300)) == 120
    assert done_below(_row(299, 0, 300)) == 300  # Kafka 4.4 leaves the SPSO on the last record


def test_a_share_group_is_drained_when_every_partition_is_done_past_every_ack() -> None:
    sample = {"partitions": [_row(299, 0, 300), _row(5, 0, 6, partition=1)]}
    assert share_group_done(sample, {0: 300, 1: 6})
    assert not share_group_done(sample, {0: 300, 1: 7})  # an ack the end does not show yet
    assert not share_group_done({"partitions": [_row(100, 200, 300)]}, {})
    assert not share_group_done(None, {})
    assert share_group_done({"partitions": [_row(-1, -1, 0)]}, {})  # nothing to consume


def test_lag_rows_give_the_checker_the_share_groups_progress_as_commits() -> None:
    sample = {"group": "g", "topic": "t", "partitions": [_row(120, 180, 300), _row(-1, -1, 4, 1)]}
    assert lag_rows(sample) == [
        {"group": "g", "topic": "t", "partition": 0, "committed": 120, "end": 300, "lag": 180},
        {"group": "g", "topic": "t", "partition": 1, "committed": None, "end": 4, "lag": 4},
    ]


def test_the_archived_reason_names_the_delivery_count_limit_and_its_value() -> None:
    said = archived_reason({"archived_at_limit": 8}, {"group.share.delivery.count.limit": 3})
    assert "8 inputs" in said and "group.share.delivery.count.limit = 3" in said
    assert "= 5" in archived_reason({"archived_at_limit": 1}, {})  # Kafka's default


def test_share_groups_are_missing_before_kafka_4_2_only() -> None:
    for old in ("3.9.2", "4.0.2", "4.1.1"):
        assert "share_groups" in lacks_by_version(old)
    for new in ("4.2.0", "4.4.0", None, "not-a-version"):
        assert "share_groups" not in lacks_by_version(new)


def test_the_definition_reads_its_group_type_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    assert load_incident(DEFINITION).group_type == "share"
    assert load_incident(Path("incidents/poll-timeout-rebalance.toml")).group_type == "consumer"
    bad = tmp_path / "share-group-lock-expiry.toml"
    bad.write_text(DEFINITION.read_text().replace('type = "share"', 'type = "queue"'))
    with pytest.raises(DefinitionError, match=r"group\.type: unknown group type 'queue'"):
        load_incident(bad)


def test_archived_inputs_are_those_the_group_moved_past_with_no_result() -> None:
    from kafka_replay.checker import ANOMALIES, CheckResult, Finding
    from kafka_replay.judging.evidence import Evidence
    from kafka_replay.judging.symptoms import measure

    acks = [
        {"kind": "ack", "event_id": f"e{i}", "partition": 0, "offset": i, "key": "k"}
        for i in range(6)
    ]
    drain = {"kind": "step", "do": "drain", "share_group": {"partitions": [_row(4, 2, 6)]}}
    findings = {name: Finding(3 if name == "duplicate" else 0, []) for name in ANOMALIES}
    check = CheckResult("at-least-once", "lossy", "fail", {}, findings)
    delivered = [{"event_id": e} for e in ("e0", "e2", "e3", "e5")]  # e1, e4 have no result
    streams = {"lifecycle": [], "app": [], "offsets": [], "lag": [], "check": check}
    share = Evidence(produce=acks, steps=[drain], deliveries=delivered, **streams)
    assert measure(share, ("archived_at_limit", "delivered_twice")) == {
        "archived_at_limit": 1,  # e1; e4 is past the start offset: still the group's to deliver
        "delivered_twice": 3,
    }
    consumer_group = Evidence(produce=acks, steps=[], deliveries=delivered, **streams)
    assert measure(consumer_group, ("archived_at_limit",)) == {"archived_at_limit": None}


# --- the admin tool, on a real broker --------------------------------------------------------


def test_the_admin_tool_configures_a_share_group_and_sees_its_member_and_progress(
    kafka_cluster: Cluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = kafka_cluster.create_topic("share-admin", 2)
    group = kafka_cluster.unique_name("share-admin")
    configured = configure_share_group(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    assert configured["set"] == {"share.auto.offset.reset": "earliest"}
    before = describe_share_group(bootstrap, group, topic)
    assert before["members"] == [] and all(r["startOffset"] == -1 for r in before["partitions"])
    produce_acked(kafka_cluster, topic, [(str(i), json.dumps({"i": i})) for i in range(40)])
    samples: list[dict] = []
    watch = ShareGroupWatch(bootstrap, group, topic, samples.append, interval_s=0.5)
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    try:
        consumer.subscribe([topic])
        accepted = 0

        def drained() -> bool:
            nonlocal accepted
            for message in consumer.poll(0.5):  # waits up to 0.5s itself
                if message.error() is None:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                    accepted += 1
            consumer.commit_sync(10)
            return share_group_done(watch.latest, {})

        poll(drained, 60, every_s=0)  # on a time-out, the asserts below say what is undone
        assert accepted >= 40  # a share group from the earliest record: the config took
        assert share_group_done(watch.latest, {}), watch.latest
        eventually(
            lambda: len((watch.latest or {}).get("members", [])) == 1,
            20,
            "the member shown",
            every_s=0.2,
        )
    finally:
        consumer.close()
        watch.stop()
    assert sum(row["end"] for row in watch.latest["partitions"]) == 40
    assert all("partitions" in s or "error" in s for s in samples)


def test_the_admin_tool_names_a_broker_that_does_not_answer() -> None:
    from kafka_replay.faults import share_group_admin

    with pytest.raises(ShareAdminError, match=r"ShareAdmin describe 127\.0\.0\.1:1 g t failed"):
        share_group_admin._run("describe", "127.0.0.1:1", "g", "t", timeout=3)


# --- the JVM reference app, and where it does not apply ----------------------------------------


@pytest.mark.parametrize(
    ("profile", "result"),
    [("vulnerable", "reproduced"), pytest.param("remediated", "cured", marks=pytest.mark.matrix)],
)
def test_the_jvm_share_worker_replays_the_lock_expiry(
    replay_incident: Replay, profile: str, result: str
) -> None:
    outcome = replay_incident("share-group-lock-expiry", profile, client_library=JVM_CLIENT)
    assert outcome.result == result, outcome.explain()
    assert outcome.passed, outcome.explain()
    assert outcome.app == "ShareWorker"
    log = (Path(outcome.run_dir) / "logs" / "app-0.log").read_text()
    assert "kafka-clients 4.4.0 (ShareWorker)" in log
    if profile == "vulnerable":
        assert outcome.anomalies["lost"] == outcome.symptoms["archived_at_limit"] >= 1
        assert any("group.share.delivery.count.limit = 3" in r for r in outcome.reasons)
    else:
        assert outcome.anomalies["lost"] == outcome.anomalies["duplicate"] == 0


def test_on_kafka_3_9_a_share_group_run_does_not_apply(replay_incident: Replay) -> None:
    outcome = replay_incident(
        "share-group-lock-expiry", "vulnerable", setup=Setup("kafka=3.9.2", kafka="3.9.2")
    )
    assert not outcome.applicable and outcome.result == "not applicable", outcome.explain()
    assert "share groups" in outcome.reasons[0] and "3.9.2" in outcome.reasons[0]


def test_with_a_confluent_kafka_without_share_consumer_the_run_does_not_apply(
    replay_incident: Replay,
) -> None:
    outcome = replay_incident(
        "share-group-lock-expiry", "vulnerable", client_library="confluent-kafka==2.6.0"
    )
    assert not outcome.applicable and outcome.result == "not applicable", outcome.explain()
    assert "confluent-kafka 2.6.0 has no ShareConsumer" in outcome.reasons[0]
