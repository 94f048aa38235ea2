"""Workloads are deterministic, stamped with identity, and land where a Java producer puts them."""

from __future__ import annotations

import json
import random
import uuid
from datetime import date, datetime
from itertools import groupby, pairwise
from pathlib import Path

import pytest

from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.definitions.workload_table import read_workload
from kafka_replay.history import RunHistory
from kafka_replay.workload import (
    Pause,
    WorkloadProducer,
    deal_flood,
    java_partition,
    murmur2,
    quiet_events,
    quiet_then_wake,
    student_onboarding,
)
from kafka_replay.workload.records import Stamper

WORKLOADS = {
    "students": lambda seed: student_onboarding(count=200, students=20, skew=1.2, seed=seed),
    "quiet": lambda seed: quiet_events(count=30, seed=seed),
    "quiet-then-wake": lambda seed: quiet_then_wake(before=5, idle_s=0.1, after=5, seed=seed),
    "deals": lambda seed: deal_flood(deals=2, runs=2, run_length=(3, 5), seed=seed),
}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_a_seeded_workload_is_the_same_twice(name: str) -> None:
    make = WORKLOADS[name]
    first, second = list(make(1).steps()), list(make(1).steps())
    assert first == second
    assert [s for s in make(2).steps()] != first


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_record_carries_its_identity(name: str) -> None:
    records = list(WORKLOADS[name](3).records())
    assert len({r.event_id for r in records}) == len(records)
    for key, group in groupby(sorted(records, key=lambda r: (r.key, r.seq)), key=lambda r: r.key):
        assert [r.seq for r in group] == list(range(len([r for r in records if r.key == key])))
    for record in records:
        value = json.loads(record.value)
        assert (value["event_id"], value["key"], value["seq"]) == (
            record.event_id,
            record.key,
            record.seq,
        )
        assert record.headers == [("event_id", record.event_id.encode())]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_values_are_what_json_dumps_would_write(name: str) -> None:
    # values are assembled from text for speed; they must stay byte-for-byte canonical JSON
    for record in WORKLOADS[name](4).records():
        assert json.dumps(json.loads(record.value), separators=(",", ":")).encode() == record.value
        assert str(uuid.UUID(record.event_id)) == record.event_id
        assert uuid.UUID(record.event_id).version == 4


def test_event_ids_are_the_uuids_of_the_seeded_bits() -> None:
    stamper, bits = Stamper(random.Random(9)), random.Random(9)
    for _ in range(1000):
        expected = str(uuid.UUID(int=bits.getrandbits(128), version=4))
        assert stamper.stamp("k", {"n": 1}).event_id == expected


def test_a_body_cannot_overwrite_the_identity() -> None:
    with pytest.raises(ValueError, match="event_id"):
        Stamper(random.Random(1)).stamp("k", {"seq": 7})


def test_small_events_are_varied_and_move_forward_in_time() -> None:
    values = [json.loads(r.value) for r in quiet_events(count=2000, keys=50, seed=6).records()]
    for field in ("account", "amount_cents", "currency"):
        assert len({v[field] for v in values}) > 50, field
    times = [datetime.fromisoformat(v["at"]) for v in values]
    assert times == sorted(times) and len(set(times)) == len(times)


def test_the_silence_shows_in_the_event_times() -> None:
    steps = list(quiet_then_wake(before=3, idle_s=600, after=3, seed=2).records())
    at = [datetime.fromisoformat(json.loads(r.value)["at"]) for r in steps]
    assert (at[3] - at[2]).total_seconds() >= 600 > (at[2] - at[0]).total_seconds()


def test_students_are_16_to_30_when_their_events_happen() -> None:
    for record in student_onboarding(count=100, students=30, seed=8).records():
        value = json.loads(record.value)
        born = date.fromisoformat(value["student"]["date_of_birth"])
        age_days = (datetime.fromisoformat(value["at"]).date() - born).days
        assert 16 * 365 <= age_days <= 31 * 365


def test_each_deal_copy_changes_one_option_and_the_revision() -> None:
    records = list(deal_flood(deals=1, runs=1, run_length=(20, 20), seed=3).records())
    deals = [json.loads(r.value)["deal"] for r in records]
    for before, after in pairwise(deals):
        assert after["revision"] == before["revision"] + 1
        changed = [
            n
            for n, (a, b) in enumerate(zip(before["options"], after["options"], strict=True))
            if a != b
        ]
        assert len(changed) == 1
        n = changed[0]
        assert after["options"][n] == {
            **before["options"][n],
            "active": not before["options"][n]["active"],
        }
    descriptions = {option["description"] for option in deals[0]["options"]}
    assert len(descriptions) == len(deals[0]["options"])


def test_key_skew_concentrates_records_on_few_keys() -> None:
    def top_share(skew: float) -> float:
        keys = [r.key for r in student_onboarding(2000, students=50, skew=skew, seed=5).records()]
        return max(keys.count(k) for k in set(keys)) / len(keys)

    assert top_share(1.5) > 3 * top_share(0.0)


def test_message_size_is_a_parameter() -> None:
    sizes = {len(r.value) for r in quiet_events(count=10, size_bytes=5000, seed=1).records()}
    assert min(sizes) >= 5000 and max(sizes) < 5100


def test_poison_at_makes_those_sign_ups_java_serialized_and_marks_them_for_dead_letters() -> None:
    clean = list(student_onboarding(count=20, students=5, seed=3).records())
    poisoned = list(student_onboarding(count=20, students=5, seed=3, poison_at=[4, 9]).records())
    assert [r.expect for r in poisoned].count("dead_letter") == 2
    for n, (before, after) in enumerate(zip(clean, poisoned, strict=True)):
        assert (after.key, after.event_id, after.seq) == (before.key, before.event_id, before.seq)
        if n in (4, 9):
            assert after.value.startswith(b"\xac\xed\x00\x05t") and before.value in after.value
            with pytest.raises(ValueError):
                json.loads(after.value)
        else:
            assert after == before
    one = list(student_onboarding(count=5, students=2, seed=3, poison_at=0).records())
    assert [r.expect for r in one] == ["dead_letter", None, None, None, None]


def test_quiet_then_wake_pauses_between_its_bursts() -> None:
    steps = list(quiet_then_wake(before=4, idle_s=90, after=6, seed=2).steps())
    pauses = [i for i, s in enumerate(steps) if isinstance(s, Pause)]
    assert pauses == [4] and steps[4] == Pause(90) and len(steps) == 11


def test_deal_documents_are_about_800kb_with_600_options() -> None:
    record = next(deal_flood(deals=1, runs=1, run_length=(1, 1), seed=4).records())
    document = json.loads(record.value)["deal"]
    assert len(document["options"]) == 600
    assert 760_000 <= len(record.value) <= 840_000


def test_murmur2_matches_kafkas_own_test_vectors() -> None:
    vectors = {
        "21": -973932308,
        "foobar": -790332482,
        "a-little-bit-long-string": -985981536,
        "a-little-bit-longer-string": -1486304829,
        "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        "abc": 479470107,
    }
    assert {text: murmur2(text.encode()) for text in vectors} == vectors


def test_800kb_deal_runs_land_on_one_partition_as_java_would_put_them(
    kafka_cluster: Cluster, kafka_topic, tmp_path
) -> None:
    topic = kafka_topic("deals", partitions=12)
    history = RunHistory(tmp_path / "run")
    workload = deal_flood(deals=3, runs=3, run_length=(6, 9), seed=11)
    stats = WorkloadProducer(kafka_cluster.bootstrap_servers, topic, history.stream("produce")).run(
        workload
    )
    acks = [e for e in history.read("produce") if e["kind"] == "ack"]
    assert stats.failed == 0 and len(acks) == stats.sent == len(list(workload.records()))
    assert all(ack["size"] > 700_000 for ack in acks)
    for deal, run in groupby(acks, key=lambda ack: ack["key"]):
        partitions = {ack["partition"] for ack in run}
        assert partitions == {java_partition(deal, 12)}, deal
    # offsets are the broker's: strictly increasing per partition, in send order. An ack can
    # name no offset (librdkafka reports none for some acknowledged batches, such as a retry the
    # broker had already written): in one loaded CI run 3 of 24 acks, one partition's, had none.
    for partition in {ack["partition"] for ack in acks}:
        offsets = [
            ack["offset"]
            for ack in acks
            if ack["partition"] == partition and ack["offset"] is not None
        ]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert sum(ack["offset"] is not None for ack in acks) > len(acks) // 2


def test_different_workloads_never_share_an_event_id_even_with_one_seed() -> None:
    chatter = {r.event_id for r in quiet_events(count=50, seed=3).records()}
    students = {r.event_id for r in student_onboarding(count=50, seed=3).records()}
    assert len(chatter) == len(students) == 50
    assert not chatter & students


@pytest.mark.parametrize(
    ("table", "where", "says"),
    [
        ({"generator": "student_onboarding", "studentz": 3}, "workloads.backlog.studentz",
         "bad parameters for student_onboarding: no parameter studentz; it takes count, "
         "students, skew, size_bytes, seed, rate, poison_at"),
        ({"generator": "tests.apps.order_load:orders", "shoe_size": 3},
         "workloads.backlog.generator", "does not take these parameters: no parameter "
         "shoe_size; it takes count, customers"),
    ],
)  # fmt: skip
def test_an_unknown_generator_parameter_is_named_with_those_it_takes(
    table: dict[str, object], where: str, says: str
) -> None:
    """A misspelt parameter is answered with the generator's own, not Python's words."""
    with pytest.raises(DefinitionError) as caught:
        read_workload(Path("incident.toml"), "workloads.backlog", table)
    assert caught.value.where == where, caught.value
    assert says in caught.value.problem, caught.value
    assert "unexpected keyword" not in str(caught.value)


def test_every_record_sent_flat_out_is_acked_once_where_it_landed(
    kafka_cluster: Cluster, kafka_topic, tmp_path
) -> None:
    topic = kafka_topic("quiet", partitions=3)
    history = RunHistory(tmp_path / "run")
    workload = quiet_events(count=5000, keys=40, size_bytes=1000, seed=12, rate=None)
    stats = WorkloadProducer(kafka_cluster.bootstrap_servers, topic, history.stream("produce")).run(
        workload
    )
    records = {r.event_id: r for r in workload.records()}
    acks = [e for e in history.read("produce") if e["kind"] == "ack"]
    assert stats.sent == stats.acked == len(acks) == len(records) and stats.failed == 0
    assert {ack["event_id"] for ack in acks} == set(records)
    for ack in acks:
        record = records[ack["event_id"]]
        assert (ack["key"], ack["seq"], ack["size"]) == (record.key, record.seq, len(record.value))
        assert ack["topic"] == topic and ack["partition"] == java_partition(record.key, 3)
    # a partition's offsets are 0..n-1, each once, and a key's records sit there in seq order
    for partition in range(3):
        landed = sorted(
            (a["offset"], a["key"], a["seq"]) for a in acks if a["partition"] == partition
        )
        assert [offset for offset, _, _ in landed] == list(range(len(landed)))
        for _, group in groupby(sorted(landed, key=lambda a: a[1]), key=lambda a: a[1]):
            seqs = [seq for _, _, seq in group]
            assert seqs == sorted(seqs)
