"""What a run's recorded streams say, for ``report.html``: pure readings, no Plotly.

When each of the checker's examples happened on the run's clock (:func:`example_moments`) and
its one line of text, the commits the checker found going back, each tombstone's level, and the
output an open transaction still held when the checker read. The timeline's panels and the page
both read them; they are tested on their own, apart from any drawing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_replay.history.recorded import RecordedRun

#: One recorded event (a line of a run's stream) or one checker example.
Event = dict[str, Any]


def offset_regressions(recorded: RecordedRun) -> list[Event]:
    """The commits the checker found below their partition's previous one: every one, from
    ``check.json`` (a check from before it carried them all: its examples)."""
    anomalies = (recorded.check or {}).get("anomalies") or {}
    found = anomalies.get("committed_offset_regression") or {}
    return list(found.get("every", found.get("examples", [])))


def tombstone_levels(entries: Iterable[Event]) -> list[tuple[Event, int]]:
    """Each tombstone with the offset it deleted, so its marker sits on the partition's line."""
    last: dict[int, int] = {}
    found = []
    for entry in entries:
        partition, offset = entry["partition"], entry.get("offset")
        if entry.get("kind") == "tombstone":
            found.append((entry, last.get(partition, 0)))
        elif offset is not None:
            last[partition] = offset
    return found


def input_times(
    recorded: RecordedRun, partition: int, offset: int, outputs: list[Event] | None
) -> list[float]:
    """When input ``partition@offset`` went through: from ``outputs``, else the app's reports."""
    if outputs:
        return [
            d["out_ts_ms"] / 1000
            for d in outputs
            if d["in_partition"] == partition and d["in_offset"] == offset
        ]
    return [ts for ts, first, last in recorded.arrivals(partition) if first <= offset <= last]


def example_moments(
    recorded: RecordedRun, kind: str, example: Event, outputs: list[Event] | None = None
) -> list[float]:
    """When a checker example happened (Unix seconds); empty when the history cannot tell.

    ``outputs`` are the matched output records of the check the example comes from (those
    with no time, a table's without a time column, tell none).
    """
    outputs = [d for d in outputs or [] if d.get("out_ts_ms") is not None]
    for key, scale in (("ts", 1), ("commit_ts_ms", 1000), ("out_ts_ms", 1000), ("ack_ts", 1)):
        if example.get(key) is not None:
            return [example[key] / scale]
    ack = _ack(recorded, example.get("event_id"))
    if kind == "lost":  # never delivered: the moment it was acknowledged
        return [ack["ts"]] if ack else []
    if kind == "stuck_lag":  # still behind when the run ended
        lag = [s for s in recorded.stream("lag") or [] if s["partition"] == example["partition"]]
        return [lag[-1]["ts"]] if lag else []
    if "in_partition" in example and "in_offset" in example:
        times = input_times(recorded, example["in_partition"], example["in_offset"], outputs)
        again = kind in ("duplicate", "reprocessing_after_reset")
        return times[1:] if again and len(times) > 1 else times
    if outputs and "event_id" in example:
        return [d["out_ts_ms"] / 1000 for d in outputs if d["event_id"] == example["event_id"]][:1]
    if ack is not None:  # known only by its id: when the app took its input
        return input_times(recorded, ack["partition"], ack["offset"], outputs)[:1]
    return []


def _ack(recorded: RecordedRun, event_id: str | None) -> Event | None:
    """The producer's acknowledgement of ``event_id``: where and when its input was written."""
    if event_id is None:
        return None
    produce = recorded.stream("produce") or []
    return next((e for e in produce if e.get("kind") == "ack" and e["event_id"] == event_id), None)


#: An example's fields not worth a line of text (its moment is shown apart).
EXAMPLE_NOISE = ("context", "ts", "commit_ts_ms", "ack_ts", "out_ts_ms", "group", "topic")


def example_text(example: Event) -> str:
    return ", ".join(f"{k}={v}" for k, v in example.items() if k not in EXAMPLE_NOISE)


def example_lines(recorded: RecordedRun) -> list[tuple[str, float | None, str]]:
    """The checker's examples: (anomaly, moment in seconds or None, one line of text)."""
    found = []
    for prefix, check, outputs in recorded.checks():
        for kind, anomaly in (check.get("anomalies") or {}).items():
            for example in anomaly.get("examples", []):
                moments = example_moments(recorded, kind, example, outputs)
                at = recorded.t(moments[0]) if moments else None
                count = anomaly.get("count", 0)
                found.append(
                    (kind, at, f"{prefix}{kind} ({count} in all): {example_text(example)}")
                )
    return found


def held_at_check(recorded: RecordedRun) -> str | None:
    """The output partitions an open transaction still held when the checker read the output:
    the outputs behind it were neither delivered nor lost, so they were not judged."""
    settled = [e for e in recorded.stream("transactions") or [] if e.get("kind") == "settled"]
    held = settled[-1].get("held") if settled else None
    if not held:
        return None
    rows = ", ".join(
        f"{row.get('topic')} p{row.get('partition')}: {row.get('held')} records behind "
        f"LSO {row.get('lso')}"
        for row in held
    )
    waited = settled[-1].get("waited_s")
    return f"still held by an open transaction when the checker read (after {waited} s): {rows}"
