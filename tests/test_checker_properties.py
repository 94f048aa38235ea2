"""Property: on generated histories with anomalies injected into the app's output and into the
input log the brokers kept, the checker reports exactly what a plain-Python reference model of
it computes, no more and no fewer."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_checker import T, counts, findings, input_log, output, write_run

LATE = 10**9  # commits land after every delivery, so no redelivery counts as a reset

#: (event_id, key, seq, partition, offset): an ack, or a record of the input log.
Record = tuple[str, str, int, int, int]


@dataclass
class History:
    acks: list[Record]
    log: list[Record]
    rows: list[tuple[str, int, int, int]]  # the output: (event_id, partition, offset, ts)
    offsets: list[dict]
    regressions: int  # commits injected below the partition's previous one
    read_log: bool  # whether the checker is given the input log


def written(draw: st.DrawFn, partition: int, keys: int) -> tuple[list[Record], list[Record]]:
    """One input partition: (acks, its log) after a leader lost some acknowledged writes,
    retries appended some twice and wrote some after later ones."""
    size = draw(st.integers(1, 10))
    seq: Counter[str] = Counter()
    produced = []
    for n in range(size):
        key = f"k{partition}-{n % keys}"  # keys stay within one partition, like Kafka
        produced.append((f"p{partition}-r{n}", key, seq[key]))
        seq[key] += 1
    order = list(produced)
    for _ in range(draw(st.integers(0, 2)) if size > 1 else 0):  # a batch retried late
        at = draw(st.integers(0, size - 2))
        late = order.pop(at)
        order.insert(draw(st.integers(at + 1, len(order))), late)
    lost = set(draw(st.sets(st.sampled_from(produced), max_size=2)))
    log = [record for record in order if record not in lost]
    for record in draw(st.sets(st.sampled_from(log), max_size=2)) if log else ():
        log.insert(draw(st.integers(log.index(record) + 1, len(log))), record)  # a second copy
    acks = []
    for at, record in enumerate(order):
        if record in lost:  # where the leader that died had written it
            acks.append((*record, partition, at))
        else:  # the copy whose ack came back: the last
            acks.append((*record, partition, len(log) - 1 - log[::-1].index(record)))
    return acks, [(*record, partition, offset) for offset, record in enumerate(log)]


@st.composite
def histories(draw: st.DrawFn) -> History:
    partitions = draw(st.integers(1, 3))
    keys = draw(st.integers(1, 3))
    acks: list[Record] = []
    log: list[Record] = []
    rows: list[tuple[str, int, int, int]] = []
    offsets: list[dict] = []
    regressions = ts = 0
    for partition in range(partitions):
        partition_acks, partition_log = written(draw, partition, keys)
        acks += partition_acks
        log += partition_log
        committed = draw(st.integers(0, len(partition_log)))  # the app got this far
        dropped = draw(st.sets(st.integers(0, committed - 1), max_size=2)) if committed else set()
        for event_id, _, _, _, offset in partition_log[:committed]:
            if offset not in dropped:
                ts += 1
                rows.append((event_id, partition, offset, ts))
        offsets.append(
            {
                "kind": "commit",
                "group": "g",
                "topic": T,
                "partition": partition,
                "offset": committed,
                "log_partition": 0,
                "log_offset": len(offsets),
                "log_ts_ms": LATE,
            }
        )
        if draw(st.booleans()) and committed > 1:  # a zombie commits an older offset afterwards
            offsets.append({**offsets[-1], "offset": committed - 1, "log_offset": len(offsets)})
            regressions += 1
    redelivered = draw(st.sets(st.sampled_from(rows), max_size=3)) if rows else set()
    for n, (event_id, partition, _, _) in enumerate(sorted(redelivered)):
        ts += 1
        rows.append((event_id, partition, 1000 + n, ts))
    for n in range(draw(st.integers(0, 2))):
        rows.append((f"stranger-{n}", 0, 5000 + n, ts + n + 1))
    return History(acks, log, rows, offsets, regressions, draw(st.booleans()))


def reference(history: History) -> dict[str, int]:
    """What the checker should find, computed the plain way (the anomalies generated here)."""
    acked: dict[str, Record] = {}
    for ack in history.acks:
        acked.setdefault(ack[0], ack)
    copies = Counter(record[0] for record in history.log) if history.read_log else None
    deliveries = Counter(row[0] for row in history.rows)
    committed: dict[int, int] = {}
    for commit in history.offsets:
        committed[commit["partition"]] = max(
            committed.get(commit["partition"], 0), commit["offset"]
        )
    found: Counter[str] = Counter()
    for event_id, _, _, partition, offset in acked.values():
        if copies is not None and not copies[event_id]:
            found["lost_write"] += 1  # not the app's loss
        elif not deliveries[event_id]:
            found["lost" if offset < committed[partition] else "unseen_at_deadline"] += 1
        if deliveries[event_id] > max(copies[event_id] if copies else 0, 1):
            found["duplicate"] += 1
    known = set(acked) | set(copies or ())
    found["unexpected"] = sum(1 for row in history.rows if row[0] not in known)
    first_deliveries = {}
    for event_id, partition, offset, _ in sorted(history.rows, key=lambda r: (r[1], r[2])):
        if event_id in acked:
            first_deliveries.setdefault(event_id, (partition, offset))
    found["reordered"] = _backwards(
        (partition, offset, acked[event_id][1], acked[event_id][2])
        for event_id, (partition, offset) in first_deliveries.items()
    )
    found["committed_offset_regression"] = history.regressions
    if copies is not None:
        found["log_duplicate"] = sum(1 for n in copies.values() if n > 1)
        first_copies = {}
        for event_id, key, seq, partition, offset in sorted(history.log, key=lambda r: r[3:]):
            first_copies.setdefault(event_id, (partition, offset, key, seq))
        found["log_reordered"] = _backwards(first_copies.values())
    return {name: count for name, count in found.items() if count}


def _backwards(records: Iterable[tuple[int, int, str, int]]) -> int:
    """Of (partition, offset, key, seq), those whose seq is below the key's previous one."""
    previous: dict[tuple[int, str], int] = {}
    backwards = 0
    for partition, _, key, seq in sorted(records):
        backwards += seq < previous.get((partition, key), seq)
        previous[(partition, key)] = seq
    return backwards


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_the_checker_reports_exactly_what_the_reference_model_finds(
    spark, history: History
) -> None:
    with tempfile.TemporaryDirectory() as work:
        run = write_run(Path(work), history.acks, offsets=history.offsets)
        source = input_log(spark, history.log) if history.read_log else None
        found = findings(spark, run, output(spark, history.rows), source=source)
        assert counts(found) == reference(history)
