"""Symptoms of how the input's partitions were loaded and read: one hot partition and the lag
it left, keys moved by a partition count change, a partition left unread, and partitions added
while the group reads.

Measured from the producer's acknowledgements, the sampled lag, the committed offsets and what
the app consumed (its reports, else the output).
"""

from __future__ import annotations

import itertools
import statistics
from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Any

from kafka_replay.definitions.vocabulary import symptom
from kafka_replay.report.outcome import Value

from .evidence import Evidence

# --- one hot partition ----------------------------------------------------------------------


#: Lag above this on the hot partition at the end means it did not keep up.
HOT_LAG_BEHIND = 10


#: Median gaps between deliveries within this factor of the fetch wait are "a fetch wait apart".
FETCH_WAIT_BAND = (0.8, 1.5)


def _partition_bytes(evidence: Evidence) -> dict[int, int]:
    sizes: dict[int, int] = defaultdict(int)
    for ack in evidence.acks:
        sizes[ack["partition"]] += ack.get("size", 0)
    return sizes


def _hot_partitions(evidence: Evidence) -> tuple[int | None, set[int]]:
    """The partition with the most bytes, and every partition with a tenth of the busiest's."""
    sizes = _partition_bytes(evidence)
    if not sizes:
        return None, set()
    hottest = max(sizes, key=lambda p: sizes[p])
    return hottest, {p for p, size in sizes.items() if size * 10 >= sizes[hottest]}


@symptom
def hot_partition(evidence: Evidence) -> Value:
    """The input partition that received the most bytes."""
    return _hot_partitions(evidence)[0]


def _final_lag(evidence: Evidence) -> dict[int, int]:
    latest: dict[int, dict[str, Any]] = {}
    for sample in evidence.lag:
        latest[sample["partition"]] = sample
    return {p: s["lag"] for p, s in latest.items()}


@symptom
def hot_partition_lag_at_end(evidence: Evidence) -> Value:
    """Lag of the busiest partitions when the drain budget ran out or the run ended."""
    _, hot = _hot_partitions(evidence)
    final = _final_lag(evidence)
    return max((final.get(p, 0) for p in hot), default=0)


@symptom
def other_partitions_max_lag(evidence: Evidence) -> Value:
    """The highest lag ever sampled on the partitions the flood did not land on."""
    _, hot = _hot_partitions(evidence)
    return max((s["lag"] for s in evidence.lag if s["partition"] not in hot), default=0)


@symptom
def lag_isolated_to_hot_partition(evidence: Evidence) -> Value:
    """Whether the busiest partitions were left behind while every other one caught up."""
    _, hot = _hot_partitions(evidence)
    final = _final_lag(evidence)
    hot_lag = max((final.get(p, 0) for p in hot), default=0)
    cold_lag = max((lag for p, lag in final.items() if p not in hot), default=0)
    return hot_lag > HOT_LAG_BEHIND and cold_lag == 0


def _flood_offsets(evidence: Evidence, partition: int | None) -> set[int]:
    """Offsets of the large records (a tenth of the largest or more) on ``partition``."""
    acks = [a for a in evidence.acks if a["partition"] == partition]
    largest = max((a.get("size", 0) for a in acks), default=0)
    return {a["offset"] for a in acks if a.get("size", 0) * 10 >= largest}


def _hot_batches(evidence: Evidence) -> list[tuple[float, dict[str, Any]]]:
    """Deliveries from the hot partition that held flood records, each with their count.

    The small records that share the partition do not count as arrivals of the flood.
    """
    hottest, _ = _hot_partitions(evidence)
    flood = sorted(_flood_offsets(evidence, hottest))
    batches = []
    for moment, span in evidence.consumed_spans():
        if span["partition"] == hottest:
            count = bisect_right(flood, span["last"]) - bisect_left(flood, span["first"])
            if count:
                batches.append((moment, {**span, "count": count}))
    return batches


@symptom
def hot_arrival_gap_s(evidence: Evidence) -> Value:
    """Median seconds between consecutive deliveries from the hot partition to the app."""
    times = [t for t, _ in _hot_batches(evidence)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return round(statistics.median(gaps), 3) if gaps else None


@symptom
def hot_records_per_arrival(evidence: Evidence) -> Value:
    """Median records of the hot partition in one delivery to the app."""
    counts = [span["count"] for _, span in _hot_batches(evidence)]
    return statistics.median(counts) if counts else None


@symptom
def hot_arrivals_fetch_wait_apart(evidence: Evidence) -> Value:
    """Whether the hot partition arrived one record at a time, about one fetch wait apart."""
    gap, per_arrival = hot_arrival_gap_s(evidence), hot_records_per_arrival(evidence)
    wait_s = float(evidence.client_config.get("fetch.max.wait.ms", 500)) / 1000
    if per_arrival is None:
        return None
    if per_arrival > 1:  # it came in bulk: one delivery carrying the whole flood says so too
        return False
    if gap is None:
        return None
    low, high = FETCH_WAIT_BAND
    return per_arrival <= 1 and low * wait_s <= gap <= high * wait_s


@symptom
def hot_drain_rate(evidence: Evidence) -> Value:
    """Flood records per second the app took from the hot partition while it had a backlog."""
    hottest, _ = _hot_partitions(evidence)
    flood = _flood_offsets(evidence, hottest)
    marks = [(a["ts"], "end", a["offset"] + 1) for a in evidence.acks if a["partition"] == hottest]
    marks = [mark for mark in marks if mark[2] - 1 in flood]
    marks += [
        (t, "position", s["last"] + 1)
        for t, s in evidence.consumed_spans()
        if s["partition"] == hottest
    ]
    end = position = 0
    behind_s, previous = 0.0, None
    for moment, kind, offset in sorted(marks):
        if previous is not None and end > position:
            behind_s += moment - previous
        if kind == "end":
            end = max(end, offset)
        else:
            position = max(position, offset)
        previous = moment
    taken = sum(span["count"] for _, span in _hot_batches(evidence))
    return round(taken / behind_s, 2) if behind_s else None


# --- partitions unread, added or changed ---------------------------------------------------


@symptom
def partition_unread_s(evidence: Evidence) -> Value:
    """Longest an input partition held acknowledged records while nothing was consumed from it."""
    spans = evidence.consumed_spans()
    if not spans:
        return None
    marks = [(a["ts"], 0, a["offset"] + 1, a["partition"]) for a in evidence.acks]
    marks += [(t, 1, s["last"] + 1, s["partition"]) for t, s in spans]
    end: dict[int, int] = defaultdict(int)
    position: dict[int, int] = defaultdict(int)
    waiting_since: dict[int, float] = {}
    longest = 0.0
    for moment, consumed, offset, partition in sorted(marks):
        if consumed:
            position[partition] = max(position[partition], offset)
            since = waiting_since.pop(partition, None)
            if since is not None:
                longest = max(longest, moment - since)
        else:
            end[partition] = max(end[partition], offset)
        if end[partition] > position[partition]:
            waiting_since.setdefault(partition, moment)
    last = max(moment for moment, *_ in marks)
    longest = max([longest, *(last - since for since in waiting_since.values())])
    return round(longest, 1)


@symptom
def keys_moved(evidence: Evidence) -> Value:
    """Keys whose records landed on more than one partition (the partition count changed)."""
    partitions: dict[str, set[int]] = defaultdict(set)
    for ack in evidence.acks:
        partitions[ack["key"]].add(ack["partition"])
    return sum(1 for seen in partitions.values() if len(seen) > 1)


@symptom
def new_partitions_started_past_zero(evidence: Evidence) -> Value:
    """Input partitions added during the run that the group began past records it never
    delivered: its first commit there lies above acknowledged inputs of that partition that
    are missing from the output (a consumer with ``auto.offset.reset = latest`` that learned of
    the partition after producers had written to it); ``null`` without an ``add_partitions``
    step on the input topic."""
    added = [
        e
        for e in evidence.steps
        if e.get("kind") == "step"
        and e["do"] == "add_partitions"
        and e.get("topic") == evidence.input_topic
        and "before" in e
    ]
    if not added:
        return None
    new = {p for e in added for p in range(e["before"], e["partitions"])}
    first_commit: dict[int, int] = {}
    for commit in evidence.offsets:  # in the order the coordinator wrote them
        if (
            commit["kind"] == "commit"
            and commit["topic"] == evidence.input_topic
            and commit["partition"] in new
        ):
            first_commit.setdefault(commit["partition"], commit["offset"])
    delivered = {d["event_id"] for d in evidence.deliveries}
    return len(
        {
            ack["partition"]
            for ack in evidence.acks
            if ack["partition"] in first_commit
            and ack.get("offset") is not None
            and ack["offset"] < first_commit[ack["partition"]]
            and ack["event_id"] not in delivered
        }
    )
