"""Symptoms of what the group read and what reached the output: consumption that went back,
inputs processed twice, lost or reordered, lag left by commits, the drain, a redeploy that began
at the log start, and a share group's redeliveries and archived records.

Measured from the checker's findings and the deliveries it matched, and from the app's
``consumed`` reports where it sends them (the output otherwise).
"""

from __future__ import annotations

from collections import defaultdict

from kafka_replay.definitions.vocabulary import symptom
from kafka_replay.report.outcome import Value

from .evidence import Evidence, has_reports

# --- where consumption went ------------------------------------------------------------------


@symptom
def consumed_offset_jumps_back(evidence: Evidence) -> Value:
    """Times a partition was consumed again from before where consumption had reached."""
    jumps = _jumps_back(evidence)
    return None if jumps is None else len(jumps)


@symptom
def largest_jump_back(evidence: Evidence) -> Value:
    """The longest backward jump of the consumed offset, in records."""
    jumps = _jumps_back(evidence)
    return None if jumps is None else max(jumps, default=0)


def _jumps_back(evidence: Evidence) -> list[int] | None:
    if not has_reports(evidence) and not evidence.deliveries:
        return None
    reached: dict[int, int] = {}
    jumps = []
    for _, span in evidence.consumed_spans():
        partition = span["partition"]
        if partition in reached and span["first"] < reached[partition]:
            jumps.append(reached[partition] - span["first"])
        reached[partition] = max(reached.get(partition, 0), span["last"] + 1)
    return jumps


@symptom
def restarted_from_log_start(evidence: Evidence) -> Value:
    """Whether the redeployed app began every partition at the start of the log."""
    windows = evidence.step_windows("start_apps", "redeploy") + evidence.step_windows(
        "start_instance", "redeploy"
    )
    if not windows or not (has_reports(evidence) or evidence.deliveries):
        return None
    log_start: dict[int, int] = {}
    for ack in evidence.acks:
        log_start[ack["partition"]] = min(
            log_start.get(ack["partition"], ack["offset"]), ack["offset"]
        )
    first_after: dict[int, int] = {}
    for moment, span in evidence.consumed_spans():
        if moment >= max(start for start, _ in windows):
            first_after.setdefault(span["partition"], span["first"])
    if not first_after:
        return False
    return all(first_after.get(p) == start for p, start in log_start.items() if p in first_after)


@symptom
def lag_while_idle(evidence: Evidence) -> Value:
    """Lag behind the log end left by commits made in the quiet period (what a monitor sees)."""
    windows = evidence.step_windows("idle", "quiet")
    if not windows:
        return None
    end: dict[int, int] = {}
    for ack in evidence.acks:
        end[ack["partition"]] = max(end.get(ack["partition"], 0), ack["offset"] + 1)
    lags = [
        end.get(commit["partition"], 0) - commit["offset"]
        for commit in evidence.offsets
        if commit["kind"] == "commit"
        and commit["topic"] == evidence.input_topic
        and any(start <= commit["commit_ts_ms"] / 1000 <= stop for start, stop in windows)
    ]
    return max(lags, default=0)


@symptom
def backlog_drained(evidence: Evidence) -> Value:
    """Whether the group caught up with the input within the drain budget."""
    drains = [e for e in evidence.steps if e["do"] == "drain"]
    return bool(drains) and all(e["drained"] for e in drains)


@symptom
def drain_s(evidence: Evidence) -> Value:
    """Seconds the last drain took (its budget when the group never caught up)."""
    drains = [e for e in evidence.steps if e["do"] == "drain"]
    return round(drains[-1]["ended"] - drains[-1]["started"], 2) if drains else None


# --- what reached the output -----------------------------------------------------------------


@symptom
def reprocessed(evidence: Evidence) -> Value:
    """Inputs whose result reached the output more often than the input log holds them."""
    return evidence.check.counts["duplicate"]


@symptom
def reprocessing_after_reset(evidence: Evidence) -> Value:
    """Redeliveries of inputs whose offsets had already been committed as done."""
    return evidence.check.counts["reprocessing_after_reset"]


@symptom
def output_send_duplicates(evidence: Evidence) -> Value:
    """Inputs whose output holds one send twice: two copies in one partition with one timestamp.

    A producer that retries a batch the broker had appended (its answer lost, idempotence off)
    writes it again with the timestamps it was sent with; an app that processes an input again
    sends it anew, with a later one. (An app that stamps its outputs with its inputs' times
    would show its reprocessing here too.)
    """
    copies: dict[tuple[str, int, int], int] = defaultdict(int)
    for row in evidence.deliveries:
        copies[(row["event_id"], row["out_partition"], row["out_ts_ms"])] += 1
    return len({event_id for (event_id, _, _), count in copies.items() if count > 1})


@symptom
def reordered(evidence: Evidence) -> Value:
    """Results of one key that reached the output in a different order than their inputs."""
    return evidence.check.counts["reordered"]


@symptom
def inputs_lost(evidence: Evidence) -> Value:
    """Acknowledged inputs missing from the output although the group committed past them."""
    return evidence.check.counts["lost"]


@symptom
def inputs_misrouted(evidence: Evidence) -> Value:
    """Inputs found in a place a correct service does not put them (``[expect]``): a good one
    in the dead-letter topic, a poison pill on an output (the checker's ``misrouted``, in the
    place the gate judged)."""
    return evidence.worst.counts["misrouted"]


@symptom
def inputs_lost_in_worst_place(evidence: Evidence) -> Value:
    """Acknowledged inputs missing from their place although the group committed past them,
    in the place the gate judged (the worst): a poison pill in neither the dead-letter topic
    nor the output counts here, where ``inputs_lost`` counts the output's."""
    return evidence.worst.counts["lost"]


@symptom
def resurrected_keys(evidence: Evidence) -> Value:
    """Keys a service's state still holds although their last input deleted them (a ``[sink]``
    with ``key_column``)."""
    return evidence.check.counts["resurrected_key"]


@symptom
def stale_values(evidence: Evidence) -> Value:
    """Keys a service's state holds at an older value than their last input's (a ``[sink]``
    with ``key_column``)."""
    return evidence.check.counts["stale_value"]


@symptom
def inputs_not_mirrored(evidence: Evidence) -> Value:
    """Acknowledged inputs lost with the primary: never delivered, and no copy on the mirror
    the app failed over to (``[mirror]``)."""
    return evidence.check.counts.get("not_mirrored", 0)


@symptom
def smallest_lost_input_bytes(evidence: Evidence) -> Value:
    """The smallest acknowledged size among lost inputs (none reached the output, their offsets
    committed past); None when nothing was lost."""
    if not evidence.check.counts["lost"]:
        return None
    committed: dict[int, int] = {}
    for sample in evidence.lag:  # the group's last committed offset of each input partition
        if sample.get("topic") == evidence.input_topic and sample.get("committed") is not None:
            committed[sample["partition"]] = sample["committed"]
    delivered = {(d["in_partition"], d["in_offset"]) for d in evidence.deliveries}
    sizes = [
        ack["size"]
        for ack in evidence.acks
        if ack.get("topic", evidence.input_topic) == evidence.input_topic
        and (ack["partition"], ack["offset"]) not in delivered
        and ack["offset"] < committed.get(ack["partition"], -1)
    ]
    return min(sizes, default=None)


# --- share groups ---------------------------------------------------------------------------
# A share group (KIP-932, ``[group] type = "share"``) has no committed offsets: the broker
# acquires records for a member, redelivers those whose acquisition lock expired, and archives a
# record at ``group.share.delivery.count.limit``. The run's drain records where the broker left
# each share-partition start offset (SPSO: everything before it acknowledged or archived).


def _share_start_offsets(evidence: Evidence) -> dict[int, int] | None:
    """Partition -> the offset below which the share group was done (acknowledged or archived)
    at the last drain (None: not a share group's run)."""
    drains = [e for e in evidence.steps if e.get("do") == "drain" and e.get("share_group")]
    if not drains:
        return None
    from kafka_replay.faults.share_group_admin import done_below  # the SPSO's reading, in one place

    rows = drains[-1]["share_group"]["partitions"]
    return {row["partition"]: done_below(row) or 0 for row in rows}


@symptom
def delivered_twice(evidence: Evidence) -> Value:
    """Inputs whose result reached the output more than once: a record worked on after its
    acquisition lock expired, while the broker had handed it to a consumer again."""
    return evidence.check.counts["duplicate"]


@symptom
def archived_at_limit(evidence: Evidence) -> Value:
    """Acknowledged inputs the share group moved past (below its start offset) with no result
    in the output: archived by the broker at the delivery-count limit (or rejected), lost to
    the app without an error; ``null`` unless the app's group is a share group."""
    starts = _share_start_offsets(evidence)
    if starts is None:
        return None
    delivered = {d["event_id"] for d in evidence.deliveries}
    return sum(
        1
        for ack in evidence.acks
        if ack["event_id"] not in delivered
        and ack["offset"] is not None
        and ack["offset"] < starts.get(ack["partition"], -1)
    )
