"""Stalls of the last stable offset, read from samples; the coordinator's rollback line."""

from __future__ import annotations

from pathlib import Path

from kafka_replay.history.broker_log import group_events
from kafka_replay.history.stable_offsets import held, lso_stalls, settle_timeout_s


def sample(ts: float, lso: int, hw: int, partition: int = 0) -> dict:
    return {"ts": ts, "topic": "out", "partition": partition, "lso": lso, "hw": hw}


def test_a_stable_offset_that_stands_while_records_come_behind_it_is_a_stall() -> None:
    samples = [
        sample(0.0, 10, 10),
        sample(0.5, 10, 14),  # a transaction opened at 10 ...
        sample(1.0, 10, 30),
        sample(1.5, 10, 52),  # ... and holds readers while later ones commit behind it
        sample(2.0, 60, 60),  # aborted: readers move on
        sample(2.5, 60, 63),  # a live transaction, seen once: no stall
        sample(3.0, 63, 63),
    ]
    [stall] = lso_stalls(samples)
    assert (stall["lso"], stall["start"], stall["end"], stall["seconds"]) == (10, 0.5, 1.5, 1.0)
    assert stall["held"] == 42


def test_a_held_offset_with_nothing_written_behind_it_is_no_stall() -> None:
    assert lso_stalls([sample(0.0, 5, 9), sample(1.0, 5, 9), sample(2.0, 5, 9)]) == []


def test_each_partition_stalls_on_its_own_and_a_stall_under_way_ends_at_the_last_sample() -> None:
    samples = [sample(0.0, 0, 5, 0), sample(0.0, 3, 3, 1), sample(4.0, 0, 9, 0)]
    samples.append(sample(4.0, 3, 3, 1))
    [stall] = lso_stalls(samples)
    assert (stall["partition"], stall["seconds"]) == (0, 4.0)


def test_held_partitions_are_those_behind_their_high_watermark() -> None:
    assert held([sample(0, 4, 4), sample(0, 2, 7, 1)]) == [{**sample(0, 2, 7, 1), "held": 5}]


def test_the_wait_lasts_as_long_as_an_open_transaction_can() -> None:
    assert settle_timeout_s({}, {}) == 75.0  # 60 s clients' default, 10 s broker's, 5 s margin
    client = {"transaction.timeout.ms": 10_000}
    broker = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}
    assert settle_timeout_s(client, broker) == 16.0


def test_the_coordinators_rollback_of_a_timed_out_transaction_is_an_event(tmp_path: Path) -> None:
    log = tmp_path / "broker-1.log"
    log.write_text(
        "[2026-11-25T09:00:01,250] INFO [TransactionCoordinator id=1] Completed rollback of "
        "ongoing transaction for transactionalId g-1-tx-0-4242 due to timeout "
        "(kafka.coordinator.transaction.TransactionCoordinator)\n"
        "[2026-11-25T09:00:02,000] INFO [TransactionCoordinator id=1] Completed rollback of "
        "ongoing transaction for transactionalId other-tx-0 due to timeout\n"
    )
    [event] = group_events([log], "g-1")
    assert (event["kind"], event["transactional_id"]) == ("transaction_timeout", "g-1-tx-0-4242")
