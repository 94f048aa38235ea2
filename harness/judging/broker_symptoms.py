"""Symptoms of the brokers and the network: what the steps did to them (kills, pauses, request
and network faults), the output partitions' in-sync replicas, and what the input log kept of the
acknowledged inputs (lost, duplicated, reordered or deleted by retention).

Measured from the steps' records, the partition leaders' events and the checker's reading of
the input log.
"""

from __future__ import annotations

from kafka_replay.definitions.vocabulary import symptom
from kafka_replay.report.outcome import Value

from .evidence import Evidence, count

# --- what the steps did to the brokers and the network ----------------------------------------


@symptom
def brokers_killed(evidence: Evidence) -> Value:
    """Brokers the steps killed (``kill_broker``)."""
    return sum(1 for e in evidence.steps if e.get("kind") == "step" and e["do"] == "kill_broker")


@symptom
def brokers_paused(evidence: Evidence) -> Value:
    """Brokers the steps froze (``pause_broker``), counted when the pause began."""
    return sum(1 for e in evidence.steps if e.get("kind") == "step" and e["do"] == "pause_broker")


@symptom
def request_faults(evidence: Evidence) -> Value:
    """Requests a ``kafka_fault`` step acted on (an answer lost, an error answer, a request delayed
    or cut)."""
    return sum(e.get("acted", 0) for e in evidence.steps if e["do"] == "kafka_fault")


@symptom
def network_faults(evidence: Evidence) -> Value:
    """Times a network fault began (each time of each ``network_fault`` step)."""
    return sum(
        len(e.get("occurrences", []))
        for e in evidence.steps
        if e["do"] == "network_fault" and e.get("kind") in ("step", "ended")
    )


@symptom
def isr_shrinks(evidence: Evidence) -> Value:
    """Times a leader of an output partition dropped followers from its in-sync replicas."""
    return count(evidence.replica_events("isr_shrink"))


@symptom
def min_isr_refusals(evidence: Evidence) -> Value:
    """acks=all writes to output partitions refused for too few in-sync replicas."""
    return count(evidence.replica_events("not_enough_replicas"))


@symptom
def unclean_elections(evidence: Evidence) -> Value:
    """Partitions of the run's topics the controller gave a leader from outside their in-sync
    replicas (its own log's account of an unclean election)."""
    return count(evidence.replica_events("unclean_election"))


# --- what the brokers kept of the input ------------------------------------------------------


def _in_log(evidence: Evidence, anomaly: str) -> Value:
    """The checker's count for ``anomaly`` of the input log; None when it read no log."""
    return evidence.check.counts[anomaly] if evidence.check.source_read else None


@symptom
def lost_writes(evidence: Evidence) -> Value:
    """Acknowledged input records the input log no longer holds (a broker lost them)."""
    return _in_log(evidence, "lost_write")


@symptom
def inputs_deleted_by_retention(evidence: Evidence) -> Value:
    """Acknowledged inputs retention deleted before the group passed them (not the app's loss)."""
    return evidence.check.counts.get("deleted_by_retention", 0)


@symptom
def tombstones_removed(evidence: Evidence) -> Value:
    """Tombstones a compacted topic's cleaner removed while ``wait_compaction`` waited."""
    return _compaction(evidence, "tombstones_removed")


@symptom
def compacted_records(evidence: Evidence) -> Value:
    """Acknowledged records a compacted topic's cleaner had removed (superseded by a later one
    of their key, or tombstones) when ``wait_compaction`` ended."""
    return _compaction(evidence, "records_removed")


def _compaction(evidence: Evidence, counted: str) -> Value:
    waits = [e for e in evidence.steps if e.get("do") == "wait_compaction" and counted in e]
    return sum(e[counted] for e in waits) if waits else None


@symptom
def log_duplicates(evidence: Evidence) -> Value:
    """Input records written to the input log more than once (a retry appended again)."""
    return _in_log(evidence, "log_duplicate")


@symptom
def log_reordered(evidence: Evidence) -> Value:
    """Input records of one key the input log holds after a later one of that key."""
    return _in_log(evidence, "log_reordered")
