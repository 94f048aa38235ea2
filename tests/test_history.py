"""The run history: crash-tolerant streams, and the group's real offset timeline from the broker."""

from __future__ import annotations

import struct

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_replay.cluster import Cluster
from kafka_replay.history import OffsetsRecorder, RunHistory, coordinator_partition, sample_lag
from kafka_replay.history.consumer_offsets import (
    decode_key,
    decode_value,
    group_reader,
    java_string_hash,
)
from kafka_replay.history.derived import consumed_spans
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.waiting import wait_for
from tests.kafka_helpers import commit_taken, produce_acked

EXPIRING = {"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}


def test_streams_append_in_order_and_survive_a_torn_last_line(tmp_path) -> None:
    history = RunHistory(tmp_path)
    stream = history.stream("lifecycle")
    for i in range(3):
        stream.append({"kind": "start", "n": i})
    with history.stream_path("lifecycle").open("a") as raw:
        raw.write('{"kind": "exit", "n"')  # a writer died mid-line
    assert [e["n"] for e in history.read("lifecycle")] == [0, 1, 2]
    assert all("ts" in e for e in history.read("lifecycle"))
    history.write_meta(incident="zombie-commit")
    history.write_meta(profile="vulnerable")
    assert history.meta() == {"incident": "zombie-commit", "profile": "vulnerable"}


def test_a_new_run_in_a_used_directory_starts_from_nothing(tmp_path) -> None:
    earlier = RunHistory(tmp_path / "run")
    earlier.stream("steps").append({"kind": "step", "do": "pause_broker"})
    earlier.write_meta(incident="paused-leader-send-expiry")
    earlier.close()
    again = RunHistory.new_run(tmp_path / "run")
    again.stream("steps").append({"kind": "step", "do": "drain"})
    assert [e["do"] for e in again.read("steps")] == ["drain"]
    assert again.meta() == {}
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a run")
    with pytest.raises(ValueError, match="not a run's history"):
        RunHistory.new_run(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "not a run"


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_offset_commit_records_decode_for_every_value_version() -> None:
    key = struct.pack(">h", 1) + _string("billing") + _string("students") + struct.pack(">i", 7)
    assert decode_key(key) == ("billing", "students", 7)
    assert decode_key(struct.pack(">h", 2) + _string("billing")) is None  # group metadata

    v1 = struct.pack(">hq", 1, 227) + _string("m") + struct.pack(">qq", 1000, 2000)
    v3 = struct.pack(">hqi", 3, 98, 4) + _string("") + struct.pack(">q", 3000)
    v4 = struct.pack(">hqi", 4, 99, -1) + bytes([2]) + b"x" + struct.pack(">q", 4000) + b"\x00"
    assert decode_value(v1) == {"offset": 227, "leader_epoch": None, "metadata": "m",
                                "commit_ts_ms": 1000, "expire_ts_ms": 2000}  # fmt: skip
    assert decode_value(v3) == {"offset": 98, "leader_epoch": 4, "metadata": "",
                                "commit_ts_ms": 3000, "expire_ts_ms": None}  # fmt: skip
    assert decode_value(v4)["metadata"] == "x" and decode_value(v4)["leader_epoch"] is None
    assert decode_value(None) is None  # tombstone


def test_group_partition_follows_javas_string_hash() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Java's one MIN_VALUE string
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert coordinator_partition("hello", 50) == 99162322 % 50


@pytest.mark.matrix  # CI: zombie-commit's backward commits, offset-retention-expiry's tombstones
@pytest.mark.kafka(broker_config=EXPIRING)
def test_backward_commit_and_expiry_tombstone_appear_in_order(
    kafka_cluster: Cluster, kafka_topic, tmp_path
) -> None:
    topic = kafka_topic("students", partitions=2)
    group = kafka_cluster.unique_name("billing")
    history = RunHistory(tmp_path / "run")
    recorder = OffsetsRecorder(kafka_cluster.bootstrap_servers, group, history.stream("offsets"))
    recorder.start()
    consumer = Consumer(kafka_cluster.client_config(**{"group.id": group}))
    try:
        for offset in (227, 98, 120):  # 227 -> 98 is the backward commit
            commit_taken(consumer, [TopicPartition(topic, 0, offset)])
    finally:
        consumer.close()  # the group is now empty, so its offsets can expire

    wait_for(
        lambda: any(r.is_tombstone for r in recorder.records),
        180,
        "no expiry tombstone within 180s",
        every_s=0.5,
        error=AssertionError,
    )
    records = recorder.stop()

    ours = [r for r in records if r.topic == topic and r.partition == 0]
    assert [r.offset for r in ours] == [227, 98, 120, None]
    assert [r.log_offset for r in ours] == sorted(r.log_offset for r in ours)
    assert ours[-1].is_tombstone
    written = [e for e in history.read("offsets") if e["topic"] == topic]
    assert [(e["kind"], e["offset"]) for e in written] == [
        ("commit", 227),
        ("commit", 98),
        ("commit", 120),
        ("tombstone", None),
    ]


def test_lag_is_sampled_per_partition(kafka_cluster: Cluster, kafka_topic) -> None:
    topic = kafka_topic("lagging", partitions=2)
    # one key, so all ten records go to one partition
    produce_acked(kafka_cluster, topic, [("k", f"v{i}") for i in range(10)])
    group = kafka_cluster.unique_name("slow")
    consumer = group_reader(kafka_cluster.bootstrap_servers, group)
    hot = consumer.list_topics(topic).topics[topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in hot}
    (busy,) = [p for p, end in ends.items() if end == 10]
    commit_taken(consumer, [TopicPartition(topic, busy, 4)])
    try:
        rows = sample_lag(consumer, group, topic)
    finally:
        consumer.close()
    by_partition = {row["partition"]: row for row in rows}
    assert by_partition[busy]["committed"] == 4 and by_partition[busy]["lag"] == 6
    (idle,) = set(by_partition) - {busy}
    assert by_partition[idle]["committed"] is None and by_partition[idle]["lag"] == 0


def test_a_finished_run_is_read_whole_and_a_missing_part_is_not_recorded(tmp_path) -> None:
    history = RunHistory(tmp_path / "run")
    history.write_meta(started=100.0, topics={"input": "in"}, group="g")
    history.stream("lag").append({"ts": 101.0, "partition": 0, "lag": 3})
    history.stream("a-new-stream").append({"ts": 102.0, "kind": "anything"})
    history.stream("app-1").append({"ts": 103.0, "kind": "consumed", "partitions": [
        {"topic": "in", "partition": 0, "first": 5, "last": 9}]})  # fmt: skip
    history.stream("app-0").append({"ts": 102.5, "kind": "assigned", "partitions": []})
    history.close()
    (history.root / "check.json").write_text('{"verdict": "exactly-once"}')

    recorded = RecordedRun.read(history.root)
    assert recorded.stream("a-new-stream") == [{"ts": 102.0, "kind": "anything"}]  # no code
    assert recorded.stream("steps") is None and recorded.deliveries is None
    assert [e["ts"] for e in recorded.app or []] == [102.5, 103.0]  # every instance, in time
    assert recorded.check == {"verdict": "exactly-once"} and recorded.side_effects is None
    assert recorded.t(101.5) == 1.5 and recorded.arrivals(0) == [(103.0, 5, 9)]
    assert RecordedRun.read(history.root, outputs=False).check is None


def test_reading_a_run_writes_nothing_into_its_directory(tmp_path) -> None:
    (tmp_path / "run.json").write_text("not json")  # a run that broke while writing it
    recorded = RecordedRun.read(tmp_path)
    assert recorded.meta == {} and recorded.app is None and recorded.start == 0.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_without_the_apps_reports_its_batches_are_read_from_the_output() -> None:
    deliveries = [
        {"in_partition": 0, "in_offset": o, "out_ts_ms": ms}
        for o, ms in ((0, 1000), (1, 1100), (2, 2000), (1, 2050))  # a gap, then a repeat
    ]
    spans = consumed_spans(None, deliveries, "in")
    batches = [(t, s["first"], s["last"]) for t, s in spans]
    assert batches == [(1.0, 0, 1), (2.0, 2, 2), (2.05, 1, 1)]
