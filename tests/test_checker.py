"""The checker on small hand-made histories whose answer is known, one anomaly at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_replay.checker import analyse, guarantee_result, sources, verdict
from kafka_replay.checker.analysis import Analysis
from kafka_replay.checker.check import history_bytes, history_inputs
from kafka_replay.checker.final_state import superseded_in
from kafka_replay.checker.spark import (
    SMALL_HISTORY_BYTES,
    SMALL_RUN_SETTINGS,
    connector_versions,
    fit_to_history,
)
from kafka_replay.history import RunHistory

T = "students"


def write_run(tmp_path: Path, acks: list[tuple[str, str, int, int, int]], **streams) -> Path:
    """A run directory: acks are (event_id, key, seq, partition, offset)."""
    run = RunHistory(tmp_path / "run")
    produce = run.stream("produce")
    for event_id, key, seq, partition, offset in acks:
        produce.append(
            {
                "kind": "ack",
                "event_id": event_id,
                "key": key,
                "seq": seq,
                "topic": T,
                "partition": partition,
                "offset": offset,
                "size": 10,
            }
        )
    for name, events in streams.items():
        stream = run.stream(name.replace("_", "-"))
        for event in events:
            stream.append(event)
    run.close()
    return run.root


def output(spark, rows: list[tuple[str | None, int, int, int | None]]):
    """Output records: (event_id, out_partition, out_offset, out_ts_ms)."""
    return spark.createDataFrame(rows, sources.OUTPUT_SCHEMA)


def input_log(spark, rows: list[tuple[str, str, int, int, int]]):
    """The input topic's log as read at check time: (event_id, key, seq, partition, offset)."""
    return spark.createDataFrame([(*row, T) for row in rows], sources.LOG_SCHEMA)


def findings(spark, run_dir: Path, committed, uncommitted=None, source=None):
    """Every anomaly, in the mode a check of a run this size runs in (``fit_to_history``)."""
    fit_to_history(spark, history_bytes(run_dir))
    return analyse(history_inputs(spark, run_dir, committed, uncommitted, source))


def counts(found) -> dict[str, int]:
    return {name: f.count for name, f in found.items() if f.count}


def commit(offset: int | None, partition: int = 0, log_offset: int = 0, log_ts_ms: int = 10_000):
    return {
        "kind": "commit" if offset is not None else "tombstone",
        "group": "g",
        "topic": T,
        "partition": partition,
        "offset": offset,
        "commit_ts_ms": log_ts_ms,
        "log_partition": 3,
        "log_offset": log_offset,
        "log_ts_ms": log_ts_ms,
    }


THREE = [("e0", "k", 0, 0, 0), ("e1", "k", 1, 0, 1), ("e2", "k", 2, 0, 2)]


def test_a_clean_run_has_no_anomaly(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3, log_offset=1, log_ts_ms=100)])
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2), ("e2", 0, 2, 3)]))
    assert counts(found) == {}


def test_missing_input_behind_a_commit_is_lost(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3, log_offset=1)])
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e2", 0, 1, 3)]))
    assert counts(found) == {"lost": 1}
    assert found["lost"].examples[0]["event_id"] == "e1"


def test_missing_input_no_commit_passed_is_unseen(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(2, log_offset=1)])
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2)]))
    assert counts(found) == {"unseen_at_deadline": 1}


def test_duplicates_are_counted_with_their_distribution(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    rows = [
        ("e0", 0, 0, 1),
        ("e1", 0, 1, 2),
        ("e2", 0, 2, 3),
        ("e1", 0, 3, 4),
        ("e2", 0, 4, 5),
        ("e2", 0, 5, 6),
    ]
    found = findings(spark, run, output(spark, rows))
    assert counts(found) == {"duplicate": 2}
    assert found["duplicate"].detail == {"distribution": {"2": 1, "3": 1}}


def test_an_input_acknowledged_twice_is_one_input(spark, tmp_path) -> None:
    run = write_run(tmp_path, [*THREE, THREE[0]], offsets=[commit(3)])
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2)]))
    assert counts(found) == {"lost": 1}  # e0 is neither lost twice nor duplicated
    assert [e["event_id"] for e in found["lost"].examples] == ["e2"]


def test_the_first_delivery_by_position_is_the_one_checked_for_order(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    rows = [("e0", 0, 0, 1), ("e2", 0, 1, 2), ("e1", 0, 2, 3), ("e1", 0, 9, 4), ("e0", 0, 10, 5)]
    found = findings(spark, run, output(spark, rows))
    assert counts(found) == {"reordered": 1, "duplicate": 2}
    assert found["reordered"].examples[0]["out_offset"] == 2


def test_output_only_visible_uncommitted_is_an_aborted_read(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    committed = [("e0", 0, 0, 1), ("e1", 0, 2, 2), ("e2", 0, 3, 3)]
    uncommitted = [*committed, ("e1", 0, 1, 2)]  # offset 1 belonged to an aborted transaction
    found = findings(spark, run, output(spark, committed), output(spark, uncommitted))
    assert counts(found) == {"aborted_read": 1}


def test_output_behind_an_open_transaction_is_neither_delivered_nor_lost(spark, tmp_path) -> None:
    # A killed transaction holds partition 0 at offset 1 (its record e9 at 1); the committed
    # transaction behind it (e1 at 2) is out of a read_committed reader's reach: e1 is neither
    # delivered nor lost, though the group committed past it; e2 behind no transaction is lost.
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    committed = [("e0", 0, 0, 1)]
    uncommitted = [*committed, ("e9", 0, 1, 2), ("e1", 0, 2, 3)]
    inputs = history_inputs(spark, run, output(spark, committed), output(spark, uncommitted))
    inputs.held = {0: 1}
    found = analyse(inputs)
    assert counts(found) == {"behind_open_transaction": 1, "lost": 1, "aborted_read": 2}
    assert found["behind_open_transaction"].examples[0]["event_id"] == "e1"
    assert found["lost"].examples[0]["event_id"] == "e2"
    inputs.held = None  # read as if nothing were held: the same input looks lost
    assert counts(analyse(inputs))["lost"] == 2


def test_seq_going_backwards_within_an_output_partition_is_reordered(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e2", 0, 1, 2), ("e1", 0, 2, 3)]))
    assert counts(found) == {"reordered": 1}
    assert found["reordered"].examples[0]["seq"] == 1


def test_order_across_output_partitions_is_not_a_reorder(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e2", 1, 0, 2), ("e1", 0, 1, 3)]))
    assert counts(found) == {}


def test_output_matching_no_input_is_unexpected(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2), ("e2", 0, 2, 3), ("zzz", 0, 3, 4), (None, 0, 4, 5)]
    assert counts(findings(spark, run, output(spark, rows))) == {"unexpected": 2}


def test_a_backward_commit_is_a_regression_but_not_after_a_tombstone(spark, tmp_path) -> None:
    offsets = [
        commit(227, log_offset=0),
        commit(98, log_offset=1),
        commit(120, log_offset=2),
        commit(None, log_offset=3),
        commit(5, log_offset=4),
    ]
    run = write_run(tmp_path, [("e0", "k", 0, 0, 0)], offsets=offsets)
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1)]))
    assert counts(found) == {"committed_offset_regression": 1}
    example = found["committed_offset_regression"].examples[0]
    assert (example["previous_offset"], example["offset"]) == (227, 98)
    assert found["committed_offset_regression"].detail == {"every": [example]}


def test_every_backward_commit_is_carried_beyond_the_examples(spark, tmp_path) -> None:
    offsets = [commit(100 - i, log_offset=i) for i in range(8)]  # each one below the last
    run = write_run(tmp_path, [("e0", "k", 0, 0, 0)], offsets=offsets)
    inputs = history_inputs(spark, run, output(spark, [("e0", 0, 0, 1)]))
    found = analyse(inputs, examples=2)["committed_offset_regression"]
    assert found.count == 7 and len(found.examples) == 2
    assert [c["offset"] for c in found.detail["every"]] == [99, 98, 97, 96, 95, 94, 93]


def _assigned(ts: float, member: str, partitions: list[int]) -> dict:
    return {
        "ts": ts,
        "kind": "assigned",
        "instance": 0,
        "member": member,
        "partitions": [{"topic": T, "partition": p, "offset": -1001} for p in partitions],
    }


def _commit_report(ts: float, member: str, partition: int, assignment: list[int]) -> dict:
    return {
        "ts": ts,
        "kind": "commit",
        "instance": 0,
        "member": member,
        "offsets": [{"topic": T, "partition": partition, "offset": 5}],
        "assignment": [{"topic": T, "partition": p, "offset": -1001} for p in assignment],
    }


def test_commits_for_partitions_the_member_did_not_hold(spark, tmp_path) -> None:
    reports = [
        _assigned(1, "a", [0, 1]),
        _commit_report(2, "a", 0, [0, 1]),  # fine
        _assigned(5, "b", [0]),  # the rebalance moved partition 0 to b
        _commit_report(6, "a", 0, [0, 1]),  # a zombie: a still thinks it holds 0
        _commit_report(7, "a", 2, [0, 1]),  # a partition it never held
        _commit_report(8, "b", 0, [0]),  # fine
    ]
    run = write_run(tmp_path, [("e0", "k", 0, 0, 0)], offsets=[commit(1)], app_0=reports)
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1)]))
    assert counts(found) == {"commit_by_non_owner": 2}
    assert [e["ts"] for e in found["commit_by_non_owner"].examples] == [6, 7]


def test_redelivery_of_committed_work_is_reprocessing_after_reset(spark, tmp_path) -> None:
    acks = [(f"e{i}", "k", i, 0, i) for i in range(4)]
    offsets = [commit(2, log_offset=0, log_ts_ms=1500), commit(4, log_offset=1, log_ts_ms=2500)]
    rows = [
        ("e0", 0, 0, 1000),
        ("e1", 0, 1, 1100),
        ("e2", 0, 2, 2000),
        ("e3", 0, 3, 2100),
        ("e2", 0, 4, 2200),  # uncommitted work redone after a crash: a plain duplicate
        ("e0", 0, 5, 3000),
        ("e1", 0, 6, 3100),
    ]  # committed work redone: a reset
    run = write_run(tmp_path, acks, offsets=offsets)
    found = findings(spark, run, output(spark, rows))
    assert counts(found) == {"duplicate": 3, "reprocessing_after_reset": 2}
    assert {e["event_id"] for e in found["reprocessing_after_reset"].examples} == {"e0", "e1"}


def test_lag_that_stays_although_all_was_processed_is_stuck(spark, tmp_path) -> None:
    acks = [("e0", "k", 0, 0, 0), ("e1", "j", 0, 1, 0), ("e2", "j", 1, 1, 1)]
    lag = [
        {"ts": 1, "group": "g", "topic": T, "partition": 0, "committed": 1, "end": 1, "lag": 0},
        {"ts": 9, "group": "g", "topic": T, "partition": 0, "committed": 0, "end": 1, "lag": 1},
        {"ts": 9, "group": "g", "topic": T, "partition": 1, "committed": 0, "end": 2, "lag": 2},
    ]
    run = write_run(tmp_path, acks, offsets=[commit(1, 0)], lag=lag)
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2)]))
    # partition 1 still misses e2 (unseen), so its lag is honest; partition 0's is stuck
    assert counts(found) == {"unseen_at_deadline": 1, "stuck_lag": 1}
    assert found["stuck_lag"].examples[0]["partition"] == 0


def test_acknowledged_writes_the_log_lost_are_lost_writes_not_the_apps_loss(
    spark, tmp_path
) -> None:
    # acks=1: e2 and e3 were acknowledged by a leader that died; the new leader's log ends
    # at offset 2 and then took e4 there
    acks = [*THREE, ("e3", "k", 3, 0, 3), ("e4", "k", 4, 0, 2)]
    run = write_run(tmp_path, acks, offsets=[commit(3)])
    log = input_log(spark, [("e0", "k", 0, 0, 0), ("e1", "k", 1, 0, 1), ("e4", "k", 4, 0, 2)])
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2), ("e4", 0, 2, 3)]
    without_log = findings(spark, run, output(spark, rows))
    assert counts(without_log) == {"lost": 1, "unseen_at_deadline": 1}  # as if the app lost them
    found = findings(spark, run, output(spark, rows), source=log)
    assert counts(found) == {"lost_write": 2}
    examples = [{k: v for k, v in e.items() if k != "ack_ts"} for e in found["lost_write"].examples]
    assert examples == [
        {"event_id": "e2", "key": "k", "seq": 2, "in_partition": 0, "in_offset": 2,
         "log_event_id": "e4"},
        {"event_id": "e3", "key": "k", "seq": 3, "in_partition": 0, "in_offset": 3,
         "log_event_id": None},  # past the log's end
    ]  # fmt: skip


def test_a_lost_write_the_app_had_read_is_still_a_lost_write(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    log = input_log(spark, [("e0", "k", 0, 0, 0), ("e1", "k", 1, 0, 1)])  # unclean election
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2), ("e2", 0, 2, 3)]
    found = findings(spark, run, output(spark, rows), source=log)
    assert counts(found) == {"lost_write": 1}
    assert found["lost_write"].examples[0]["event_id"] == "e2"


def test_inputs_absent_from_the_mirror_the_app_moved_to_were_not_mirrored(spark, tmp_path) -> None:
    # e0 processed on the primary, then again on the mirror; e1 and e2 were copied and
    # processed there once; e3 and e4 were acknowledged by the primary, lost with it uncopied
    acks = [*THREE, ("e3", "k", 3, 0, 3), ("e4", "k", 4, 0, 4)]
    run = write_run(tmp_path, acks, offsets=[commit(1)])  # the primary saw a commit at 1
    copy = input_log(spark, THREE)
    rows = [("e0", 0, 0, 1), ("e0", 0, 1, 2), ("e1", 0, 2, 3), ("e2", 0, 3, 4)]
    inputs = history_inputs(spark, run, output(spark, rows), source=copy)
    inputs.source_mirrored = True
    found = analyse(inputs)
    assert counts(found) == {"not_mirrored": 2, "duplicate": 1}
    assert [e["event_id"] for e in found["not_mirrored"].examples] == ["e3", "e4"]
    inputs.source_mirrored = False  # the same log as the run's own: writes its brokers lost
    assert counts(analyse(inputs)) == {"lost_write": 2, "duplicate": 1}


def log_start(ts: float, start: int, committed: int | None = None, end: int = 6) -> dict:
    """A lag sample of partition 0 that says where its log starts."""
    lag = end - committed if committed is not None else end
    return {"ts": ts, "group": "g", "topic": T, "partition": 0, "committed": committed,
            "start": start, "end": end, "lag": lag}  # fmt: skip


SIX = [(f"e{i}", "k", i, 0, i) for i in range(6)]
#: the group read e0 and e1, stalled, and retention deleted offsets 0 to 3 at 3 s
STALLED = [log_start(1, 0, 2), log_start(2, 0, 2), log_start(3, 4, 2), log_start(6, 4, 6)]


def test_inputs_retention_deleted_before_the_group_passed_them_are_not_the_apps_loss(
    spark, tmp_path
) -> None:
    # on resuming, the group jumped to the log end (auto.offset.reset=latest) and committed it:
    # e2 and e3 were gone already, e4 and e5 it skipped while the log still held them
    run = write_run(tmp_path, SIX, offsets=[commit(6, log_ts_ms=5_000)], lag=STALLED)
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2)]
    log = input_log(spark, [("e4", "k", 4, 0, 4), ("e5", "k", 5, 0, 5)])
    for source in (None, log):  # the lag samples alone judge it; the log read changes nothing
        found = findings(spark, run, output(spark, rows), source=source)
        assert counts(found) == {"deleted_by_retention": 2, "lost": 2}
        assert [e["event_id"] for e in found["lost"].examples] == ["e4", "e5"]
        example = {
            k: v for k, v in found["deleted_by_retention"].examples[0].items() if k != "ack_ts"
        }
        assert example == {
            "event_id": "e2", "key": "k", "seq": 2, "in_partition": 0, "in_offset": 2,
            "deleted_ts_ms": 3000, "seen_ts_ms": 2000, "log_start_from": 0, "log_start_to": 4,
            "committed_past_ts_ms": 5000,
        }  # fmt: skip


def test_an_input_a_commit_passed_while_the_log_held_it_stays_lost(spark, tmp_path) -> None:
    run = write_run(tmp_path, SIX, offsets=[commit(6, log_ts_ms=1_500)], lag=STALLED)
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2)]))
    assert counts(found) == {"lost": 4}  # skipped in the log, deleted only afterwards


def test_a_commit_within_one_lag_sample_of_the_deletion_counts_as_after_it(spark, tmp_path) -> None:
    # the log still held e2 and e3 at 2 s and no longer at 3 s: a commit at 2.5 s is after it
    run = write_run(tmp_path, SIX, offsets=[commit(6, log_ts_ms=2_500)], lag=STALLED)
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2)]))
    assert counts(found) == {"deleted_by_retention": 2, "lost": 2}


def test_inputs_deleted_that_no_commit_passed_are_deleted_not_unseen(spark, tmp_path) -> None:
    run = write_run(tmp_path, SIX, offsets=[commit(2, log_ts_ms=500)], lag=STALLED)
    found = findings(spark, run, output(spark, [("e0", 0, 0, 1), ("e1", 0, 1, 2)]))
    assert counts(found) == {"deleted_by_retention": 2, "unseen_at_deadline": 2}
    assert found["deleted_by_retention"].examples[0]["committed_past_ts_ms"] is None


def test_the_log_read_at_check_time_shows_deletions_after_the_last_sample(spark, tmp_path) -> None:
    # no sample saw the log start move; the log read at check time starts at offset 4
    lag = [log_start(1, 0, 2), log_start(2, 0, 2)]
    run = write_run(tmp_path, SIX, offsets=[commit(2, log_ts_ms=500)], lag=lag)
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2)]
    log = input_log(spark, [("e4", "k", 4, 0, 4), ("e5", "k", 5, 0, 5)])
    found = findings(spark, run, output(spark, rows), source=log)
    assert counts(found) == {"deleted_by_retention": 2, "unseen_at_deadline": 2}  # no lost_write
    example = found["deleted_by_retention"].examples[0]
    assert (example["deleted_ts_ms"], example["seen_ts_ms"]) == (None, 2000)


def test_where_the_log_starts_once_read_judges_what_the_read_found_empty(spark, tmp_path) -> None:
    # by check time retention deleted the whole log: e4 and e5 too, after the group skipped them
    run = write_run(tmp_path, SIX, offsets=[commit(6, log_ts_ms=5_000)], lag=STALLED)
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2)]
    inputs = history_inputs(spark, run, output(spark, rows), source=input_log(spark, []))
    # the read alone cannot tell a record deleted from the log's start from a lost write
    assert counts(analyse(inputs)) == {"deleted_by_retention": 2, "lost_write": 2}
    inputs.log_starts = lambda: [(T, 0, 6)]
    found = analyse(inputs)
    assert counts(found) == {"deleted_by_retention": 2, "lost": 2}
    assert [e["event_id"] for e in found["lost"].examples] == ["e4", "e5"]


def test_an_input_deleted_after_its_delivery_is_no_anomaly(spark, tmp_path) -> None:
    run = write_run(
        tmp_path,
        THREE,
        offsets=[commit(3)],
        lag=[log_start(1, 0, 3, end=3), log_start(2, 2, 3, end=3)],
    )
    log = input_log(spark, [("e2", "k", 2, 0, 2)])
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2), ("e2", 0, 2, 3)]
    assert counts(findings(spark, run, output(spark, rows), source=log)) == {}


def test_an_input_the_log_holds_twice_may_be_delivered_twice(spark, tmp_path) -> None:
    # a retried batch appended again after e2: e1 is at offsets 1 and 3
    log = [("e0", "k", 0, 0, 0), ("e1", "k", 1, 0, 1), ("e2", "k", 2, 0, 2), ("e1", "k", 1, 0, 3)]
    log.append(("e9", "k", 9, 0, 4))  # in the log, its ack never came back
    offsets = [commit(2, log_offset=0, log_ts_ms=1500), commit(5, log_offset=1, log_ts_ms=9000)]
    run = write_run(tmp_path, THREE, offsets=offsets)
    rows = [("e0", 0, 0, 1000), ("e1", 0, 1, 1100), ("e2", 0, 2, 2000), ("e1", 0, 3, 2100)]
    rows.append(("e9", 0, 4, 2200))
    without_log = findings(spark, run, output(spark, rows))
    assert counts(without_log) == {"duplicate": 1, "reprocessing_after_reset": 1, "unexpected": 1}
    found = findings(spark, run, output(spark, rows), source=input_log(spark, log))
    assert counts(found) == {"log_duplicate": 1}
    assert found["log_duplicate"].detail == {"distribution": {"2": 1}}
    assert found["log_duplicate"].examples == [
        {"event_id": "e1", "key": "k", "seq": 1, "partition": 0, "copies": 2, "offsets": [1, 3]}
    ]
    # a third delivery is one more than the log holds
    again = findings(
        spark, run, output(spark, [*rows, ("e1", 0, 5, 2300)]), source=input_log(spark, log)
    )
    assert counts(again) == {"log_duplicate": 1, "duplicate": 1, "reprocessing_after_reset": 1}
    assert (
        again["duplicate"].examples[0]["deliveries"],
        again["duplicate"].examples[0]["copies"],
    ) == (3, 2)


def test_a_retried_batch_written_after_a_later_one_is_reordered_in_the_log(spark, tmp_path) -> None:
    acks = [*THREE, ("j0", "j", 0, 0, 5), ("j1", "j", 1, 0, 4)]
    run = write_run(tmp_path, acks, offsets=[commit(7)])
    log = [
        ("e0", "k", 0, 0, 0),
        ("e2", "k", 2, 0, 1),
        ("e1", "k", 1, 0, 2),  # written after e2, its later seq
        ("j0", "j", 0, 0, 3),
        ("j1", "j", 1, 0, 4),
        ("j0", "j", 0, 0, 5),  # a second copy: only the first copy's place counts
        ("e2", "k", 2, 0, 6),
    ]
    rows = [(event_id, 0, offset, offset) for event_id, _, _, _, offset in log]  # in log order
    found = findings(spark, run, output(spark, rows), source=input_log(spark, log))
    # the app kept the log's order, so its output is out of seq order too
    assert counts(found) == {"log_reordered": 1, "log_duplicate": 2, "reordered": 1}
    assert found["log_reordered"].examples == [
        {"event_id": "e1", "key": "k", "seq": 1, "previous_seq": 2, "in_partition": 0,
         "in_offset": 2},
    ]  # fmt: skip


def test_the_totals_count_the_log_only_when_it_was_read(spark, tmp_path) -> None:
    run = write_run(tmp_path, THREE, offsets=[commit(3)])
    rows = [("e0", 0, 0, 1), ("e1", 0, 1, 2), ("e2", 0, 2, 3)]
    log = input_log(spark, [("e0", "k", 0, 0, 0), ("e1", "k", 1, 0, 1), ("e2", "k", 2, 0, 2)])
    for source, expected in ((None, {}), (log, {"log_records": 3})):
        analysis = Analysis(history_inputs(spark, run, output(spark, rows), source=source), 5)
        try:
            assert analysis.totals() == {
                "acknowledged": 3, "output_records": 3, "delivered": 3, **expected
            }  # fmt: skip
            assert counts(analysis.findings()) == {}
        finally:
            analysis.close()


def test_a_small_check_runs_interpreted_and_finds_what_code_generation_finds(spark, tmp_path):
    acks = [(f"e{n}", f"k{n % 3}", n // 3, n % 2, n // 2) for n in range(12)]
    run = write_run(tmp_path, acks, offsets=[commit(6, 0), commit(6, 1)])
    rows = [(f"e{n}", 0, n, n) for n in (0, 1, 2, 2, 5, 4, 7, 9)] + [("x", 0, 10, 10)]

    def found_with(history_bytes: int) -> tuple[dict[str, str], dict[str, object]]:
        fit_to_history(spark, history_bytes)
        mode = {key: spark.conf.get(key) for key in SMALL_RUN_SETTINGS}
        small = history_bytes <= SMALL_HISTORY_BYTES
        found = analyse(history_inputs(spark, run, output(spark, rows)), small=small)
        return mode, {name: (f.count, f.examples) for name, f in found.items()}

    # what the session was built with (Spark's defaults), whatever an earlier check left
    own = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
    own["spark.sql.adaptive.enabled"] = "true"
    own["spark.sql.autoBroadcastJoinThreshold"] = "10485760b"
    own["spark.sql.maxSinglePartitionBytes"] = "134217728b"
    try:
        small_mode, small = found_with(SMALL_HISTORY_BYTES)
        large_mode, large = found_with(SMALL_HISTORY_BYTES + 1)
    finally:
        fit_to_history(spark, SMALL_HISTORY_BYTES + 1)
    assert small_mode == SMALL_RUN_SETTINGS
    assert large_mode == own  # the session's own settings are back
    assert small == large
    found = {name: count for name, (count, _) in small.items() if count}
    assert found == {"lost": 5, "duplicate": 1, "unexpected": 1}


@pytest.mark.parametrize(
    ("lost", "duplicated", "unseen", "expected"),
    [
        (0, 0, 0, "exactly-once"),
        (0, 3, 0, "at-least-once"),
        (2, 0, 0, "at-most-once"),
        (2, 3, 0, "lossy"),
        (0, 0, 4, "unknown"),
        (0, 3, 4, "unknown"),
        (1, 0, 4, "at-most-once"),
    ],
)
def test_verdict(lost: int, duplicated: int, unseen: int, expected: str) -> None:
    assert verdict(lost, duplicated, unseen) == expected


def test_judgement_against_the_declared_guarantee() -> None:
    assert guarantee_result("exactly-once", 0, 0, 0) == "pass"
    assert guarantee_result("exactly-once", 0, 1, 0) == "fail"
    assert (
        guarantee_result("exactly-once", 0, 1, 5) == "fail"
    )  # a duplicate fails it, whatever is unseen
    assert guarantee_result("at-least-once", 0, 1, 0) == "pass"
    assert guarantee_result("at-least-once", 0, 0, 5) == "unknown"
    assert guarantee_result("at-least-once", 1, 0, 0) == "fail"
    with pytest.raises(ValueError, match="at-most-twice"):
        guarantee_result("at-most-twice", 0, 0, 0)


def test_a_pyspark_release_takes_the_connector_of_its_own_line() -> None:
    assert connector_versions("4.0.0") == ["4.0.0"]
    # 4.2.1's own is not on Maven Central: the earlier patch releases of its line follow it
    assert connector_versions("4.2.1") == ["4.2.1", "4.2.0"]
    assert connector_versions("4.2.1.dev0") == ["4.2.1.dev0", "4.2.1", "4.2.0"]
    assert connector_versions("nightly") == ["nightly"]


def test_inputs_a_compacted_logs_cleaner_removed_are_not_lost_writes(spark, tmp_path) -> None:
    # a compacted input: its cleaner kept each key's last record (e2 of k, e4 of j); e0 and e1
    # were superseded and removed before the app read them; e3, the last of its key, was lost
    acks = [*THREE, ("e3", "m", 0, 0, 3), ("e4", "j", 0, 0, 4), ("e5", "j", 1, 0, 5)]
    run = write_run(tmp_path, acks, offsets=[commit(6)])
    log = input_log(spark, [("e2", "k", 2, 0, 2), ("e5", "j", 1, 0, 5)])
    rows = [("e2", 0, 0, 1), ("e4", 0, 1, 2), ("e5", 0, 2, 3)]  # e4 read before it was removed
    fit_to_history(spark, history_bytes(run))
    inputs = history_inputs(spark, run, output(spark, rows), source=log)
    inputs.acks = superseded_in(inputs.acks, [T])
    found = analyse(inputs)
    assert counts(found) == {"removed_by_compaction": 2, "lost_write": 1}
    assert [e["event_id"] for e in found["removed_by_compaction"].examples] == ["e0", "e1"]
    assert found["lost_write"].examples[0]["event_id"] == "e3"
