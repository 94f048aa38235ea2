"""Symptoms of the consumer group itself: members dropped and rebalances, the commits the
coordinator accepted or refused, static membership, eager revocations and protocol migration.

Measured from the coordinators' events where the brokers' logs were read, and from the app's
``commit``, ``commit_result``, ``assigned`` and ``revoked`` reports where it sends them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka_replay.definitions.vocabulary import symptom
from kafka_replay.history.broker_log import POLL_TIMEOUT
from kafka_replay.report.outcome import Value

from .evidence import Evidence, count, has_reports, instance_of

# --- members and rebalances -----------------------------------------------------------------


def _unexplained_leaves(evidence: Evidence) -> list[dict[str, Any]]:
    """Members that left while their process ran on: not while the harness stopped, signalled
    or saw the instance exit (a Java consumer's poll-timeout leave is named as such)."""
    assert evidence.group is not None
    windows, opened = [], {}
    for event in evidence.lifecycle:
        if event["kind"] in ("stop", "signal"):
            opened.setdefault(instance_of(event), event["ts"])
        elif event["kind"] == "exit":
            windows.append((opened.pop(instance_of(event), event["ts"]) - 1.0, event["ts"] + 2.0))
    windows += [(start - 1.0, float("inf")) for start in opened.values()]
    return [
        e
        for e in evidence.group
        if e["kind"] == "leave"
        and (POLL_TIMEOUT in e["reason"] or not any(a <= e["ts"] <= b for a, b in windows))
    ]


@symptom
def max_poll_exceeded(evidence: Evidence) -> Value:
    """Times a consumer was dropped from the group for missing its poll interval."""
    if has_reports(evidence):
        errors = evidence.app_events("client_error")
        return sum(1 for e in errors if e["code"] == "_MAX_POLL_EXCEEDED")
    return None if evidence.group is None else len(_unexplained_leaves(evidence))


@symptom
def members_removed(evidence: Evidence) -> Value:
    """Members the coordinator removed or fenced (session or rebalance timeout), from its log."""
    return count(evidence.group_events("removed"))


@symptom
def rebalances(evidence: Evidence) -> Value:
    """Rebalances the group went through, from the coordinator's log."""
    return count(evidence.group_events("rebalance"))


# --- commits -------------------------------------------------------------------------------


@symptom
def rejected_commits(evidence: Evidence) -> Value:
    """Offset commits the group coordinator refused."""
    if not has_reports(evidence):
        return None
    return sum(1 for e in evidence.app_events("commit_result") if not e["ok"])


@symptom
def committed_offset_regressions(evidence: Evidence) -> Value:
    """Accepted commits that moved a partition's committed offset backwards."""
    return evidence.check.counts["committed_offset_regression"]


@symptom
def stale_commits_accepted(evidence: Evidence) -> Value:
    """Accepted commits for a partition the committing member no longer owned."""
    return evidence.check.counts["commit_by_non_owner"] if has_reports(evidence) else None


@symptom
def stale_commits_fenced(evidence: Evidence) -> Value:
    """Commits for partitions outside the member's assignment that the broker refused."""
    if not has_reports(evidence):
        return None
    last_commit: dict[int, dict[str, Any]] = {}
    fenced = 0
    for event in evidence.app:
        if event["kind"] == "commit":
            last_commit[event["pid"]] = event
        elif event["kind"] == "commit_result" and not event["ok"]:
            commit = last_commit.get(event["pid"])
            if commit is not None and _outside_assignment(commit):
                fenced += 1
    return fenced


def _outside_assignment(commit: dict[str, Any]) -> bool:
    owned = {(p["topic"], p["partition"]) for p in commit["assignment"]}
    return any((p["topic"], p["partition"]) not in owned for p in commit["offsets"])


@symptom
def offset_tombstones(evidence: Evidence) -> Value:
    """Committed offsets of the group deleted by the broker (expired)."""
    return sum(1 for e in evidence.offsets if e["kind"] == "tombstone")


# --- static membership ----------------------------------------------------------------------


def _members(evidence: Evidence, kind: str) -> Value:
    """Distinct members with a ``kind`` event: a fenced member is told so at each request."""
    events = evidence.group_events(kind)
    return None if events is None else len({e["member"] for e in events})


@symptom
def static_members_fenced(evidence: Evidence) -> Value:
    """Static members fenced by a newer member with their group.instance.id (FENCED_INSTANCE_ID)."""
    return _members(evidence, "static_fenced")


@symptom
def static_joins_refused(evidence: Evidence) -> Value:
    """Static members refused because one that never left held their id (UNRELEASED_INSTANCE_ID)."""
    return _members(evidence, "static_refused")


# --- rolling deploys --------------------------------------------------------------------------


@symptom
def whole_assignment_revocations(evidence: Evidence) -> Value:
    """Times a member that stayed in the group gave up every partition it held in a rebalance
    (the eager protocol's revocation: a cooperative member gives up only what moves), from the
    app's ``revoked`` and ``assigned`` reports; a member's revocation as it leaves is not one."""
    if not has_reports(evidence):
        return None
    held: dict[str, set[tuple[str, int]]] = defaultdict(set)
    emptied: dict[str, int] = defaultdict(int)  # whole revocations not yet followed by an assign
    count = 0
    for event in evidence.app:
        if event["kind"] not in ("assigned", "revoked"):
            continue
        member = event.get("member") or ""
        partitions = {(p["topic"], p["partition"]) for p in event.get("partitions", [])}
        if event["kind"] == "assigned":
            count += emptied.pop(member, 0)  # the member went on: it did not leave
            held[member] |= partitions
        elif partitions:
            if held[member] and held[member] <= partitions:
                emptied[member] += 1
            held[member] -= partitions
    return count


# --- group protocol migration ---------------------------------------------------------------


#: The codes a ``consumer``-protocol coordinator refuses a commit with when the member's epoch
#: moved on or the member is gone (KIP-848): the commit is for an assignment that is over.
FENCED_COMMIT_CODES = frozenset({"STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"})


@symptom
def group_conversions(evidence: Evidence) -> Value:
    """Times the coordinator converted the group between the classic and consumer types."""
    converted = evidence.group_events("converted")
    return None if converted is None else len(converted)


@symptom
def consumer_protocol_joins(evidence: Evidence) -> Value:
    """Members that joined the group speaking KIP-848's consumer protocol, from its log."""
    joined = evidence.group_events("joined")
    if joined is None:
        return None
    return len({e["member"] for e in joined if e["protocol"] == "consumer"})


@symptom
def stale_epoch_commits(evidence: Evidence) -> Value:
    """Commits refused as STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (the app's reports)."""
    if not has_reports(evidence):
        return None
    results = evidence.app_events("commit_result")
    return sum(1 for e in results if not e["ok"] and e.get("code") in FENCED_COMMIT_CODES)
