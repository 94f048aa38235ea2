"""Property: on generated clean histories with known anomalies injected, the checker reports
exactly those, no more and no fewer."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_checker import T, counts, findings, output, write_run

LATE = 10**9  # commits land after every delivery, so no redelivery counts as a reset


@st.composite
def histories(draw: st.DrawFn) -> dict:
    partitions = draw(st.integers(1, 3))
    keys = draw(st.integers(1, 4))
    acks, rows, offsets = [], [], []
    expected = {}
    seq: dict[str, int] = {}
    lost = unseen = 0
    ts = 0
    for partition in range(partitions):
        size = draw(st.integers(1, 12))
        tail = draw(st.integers(0, size - 1))  # the last `tail` records were never reached
        committed = size - tail
        dropped = set(draw(st.sets(st.integers(0, committed - 1), max_size=2)))
        for offset in range(size):
            key = f"k{partition}-{offset % keys}"  # keys stay within one partition, like Kafka
            event_id = f"p{partition}-o{offset}"
            acks.append((event_id, key, seq.setdefault(key, 0), partition, offset))
            seq[key] += 1
            if offset >= committed:
                unseen += 1
            elif offset in dropped:
                lost += 1
            else:
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
            expected["committed_offset_regression"] = (
                expected.get("committed_offset_regression", 0) + 1
            )
    delivered = [row for row in rows]
    duplicated = (
        draw(st.sets(st.sampled_from([r[0] for r in delivered]), max_size=3))
        if delivered
        else set()
    )
    next_offset = {p: 1000 for p in range(partitions)}
    for row in delivered:
        if row[0] in duplicated:
            ts += 1
            rows.append((row[0], row[1], next_offset[row[1]], ts))
            next_offset[row[1]] += 1
    strangers = draw(st.integers(0, 2))
    for n in range(strangers):
        rows.append((f"stranger-{n}", 0, 5000 + n, ts + n + 1))
    for name, value in (
        ("lost", lost),
        ("unseen_at_deadline", unseen),
        ("duplicate", len(duplicated)),
        ("unexpected", strangers),
    ):
        if value:
            expected[name] = value
    return {"acks": acks, "rows": rows, "offsets": offsets, "expected": expected}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_the_checker_reports_exactly_the_injected_anomalies(spark, history: dict) -> None:
    with tempfile.TemporaryDirectory() as work:
        run = write_run(Path(work), history["acks"], offsets=history["offsets"])
        found = findings(spark, run, output(spark, history["rows"]))
        assert counts(found) == history["expected"]
