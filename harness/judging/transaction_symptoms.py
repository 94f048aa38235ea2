"""Symptoms of the app's transactions: producer ids that expired or were refused, transactions
timed out or left open, the last stable offset held behind one, and side effects written outside
the transaction more than once.

Measured from the coordinators' events, the sampled last stable offsets, what the run found open
before the check, the side-effect checker and the app's ``app_error`` reports.
"""

from __future__ import annotations

from kafka_replay.definitions.vocabulary import symptom
from kafka_replay.history.stable_offsets import lso_stalls
from kafka_replay.report.outcome import Value

from .evidence import Evidence, count, has_reports

PRODUCER_ID_ERRORS = frozenset(
    {"INVALID_PRODUCER_ID_MAPPING", "UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_EPOCH"}
)


@symptom
def producer_id_errors(evidence: Evidence) -> Value:
    """Transactions that failed because the broker no longer knew the app's producer id."""
    if not has_reports(evidence):
        return None
    return sum(1 for e in evidence.app_events("app_error") if e["code"] in PRODUCER_ID_ERRORS)


@symptom
def producer_ids_expired(evidence: Evidence) -> Value:
    """Times an app's transactional id came back with a new producer id (the old one expired)."""
    if evidence.group is None:
        return None
    held: dict[str, int] = {}
    expired = 0
    for event in (e for e in evidence.group if e["kind"] == "producer_id"):
        previous = held.get(event["transactional_id"])
        expired += previous is not None and previous != event["id"]
        held[event["transactional_id"]] = event["id"]
    return expired


@symptom
def transaction_timeouts(evidence: Evidence) -> Value:
    """Transactions of the app the coordinator rolled back because they outlived their timeout."""
    return count(evidence.group_events("transaction_timeout"))


@symptom
def open_transactions_at_end(evidence: Evidence) -> Value:
    """Output partitions an open transaction still held when the checker read the output."""
    settled = [e for e in evidence.transactions if e["kind"] == "settled"]
    return len(settled[-1]["held"]) if settled else None


@symptom
def lso_stall_s(evidence: Evidence) -> Value:
    """Longest an output partition's last stable offset stood still as records came behind it."""
    if not evidence.stable:
        return None
    return max((stall["seconds"] for stall in lso_stalls(evidence.stable)), default=0.0)


@symptom
def lso_held_records(evidence: Evidence) -> Value:
    """Most output records held behind a stalled last stable offset: a read_committed lag."""
    if not evidence.stable:
        return None
    return max((stall["held"] for stall in lso_stalls(evidence.stable)), default=0)


@symptom
def side_effect_duplicates(evidence: Evidence) -> Value:
    """Inputs whose side effect (written outside the transaction) happened more than once.

    Not measurable when the app wrote no side effects at all (an app without such a sink).
    """
    side = evidence.side_effects
    if side is None or not side.totals.get("output_records"):
        return None
    return side.counts["duplicate"]
