"""What the brokers' own logs say about one consumer group and one app's producers.

The group coordinator logs every join, leave, removal and rebalance at INFO, whatever client
the app uses; the transaction coordinator logs the producer id each transactional id gets.
Reading them lets a run judge an app that reports nothing itself. Events, in time order:

- ``leave``: a member left the group (``reason`` is the client's: a Java consumer says
  ``consumer poll timeout has expired``; librdkafka and the ``consumer`` protocol give none);
- ``removed``: the coordinator removed or fenced a member (``reason``: session timeout, ...);
- ``rebalance``: the group began a rebalance (``generation`` it leaves, ``reason``), or under
  the ``consumer`` protocol computed a new target assignment (``generation`` is its epoch);
- ``stabilized``: the group completed one (``generation``, ``members``);
- ``empty``: the group has no member left (``generation``): a rebalance it was in is over;
- ``producer_id``: a transactional id of the app was given a producer id; a new id for a
  transactional id that had one means the old one was expired (an epoch bump keeps the id);
- ``static_fenced``: a static member (``group.instance.id``) lost its id to a newer member
  with the same id (``FENCED_INSTANCE_ID`` to the older one; ``member``, ``instance_id``,
  ``by``); the classic coordinator's line names no group, so it is kept when its member ids
  belong to the group;
- ``static_refused``: under the ``consumer`` protocol, a static member could not join because
  a member that never left still holds its id (``UNRELEASED_INSTANCE_ID``);
- ``converted``: the coordinator converted the group between the classic and the ``consumer``
  (KIP-848) types, as the online migration does when the first member of the other protocol
  joins or the last one leaves (``from``, ``to``);
- ``joined``: a member joined a ``consumer``-type group (``member``, ``protocol``: ``consumer``
  for a member that speaks KIP-848's protocol, ``classic`` for one still on the old one);
- ``transaction_timeout``: the coordinator rolled back a transaction of the app that outlived
  its ``transaction.timeout.ms`` (an app killed mid-transaction that never came back with the
  same transactional id leaves one).

:func:`replica_events` reads the partition leaders' events for the run's topics and the
controllers' unclean elections, and
:func:`refused_versions` the requests a broker refused for a protocol version it does not serve.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{3})\] \w+ (.*)$")
_LEAVE = re.compile(
    r"Member (\S+) has left group (?:\S+ )?through explicit `LeaveGroup`(?: request)?; "
    r"client reason: (.*?)(?: \((?:org\.apache|kafka)\.|$)"
)
# Kafka 3.x's coordinator names a member by its whole metadata, spaces and all.
_MEMBER_METADATA = re.compile(r"MemberMetadata\(memberId=([^,]+),.*?\)(?= has | in group )")
#: Kafka 3.x's coordinator names the offsets partition after a generation.
_OFFSETS_PARTITION = r"(?: \(__consumer_offsets-\d+\))?"
# The KIP-848 ``consumer`` protocol's coordinator words the same events its own way.
_LEFT_CONSUMER_GROUP = re.compile(r"Member (\S+) left the consumer group")
_NEW_ASSIGNMENT = re.compile(r"Computed a new target assignment for epoch (\d+)")
_REBALANCE = re.compile(
    rf"Preparing to rebalance group \S+ .*old generation (\d+){_OFFSETS_PARTITION} \(reason: (.*)\)"
)
_STABILIZED = re.compile(
    rf"Stabilized group \S+ generation (\d+){_OFFSETS_PARTITION} with (\d+) members"
)
_EMPTY = re.compile(r"Group \S+ with generation (\d+) is now empty")
_REMOVED = (
    re.compile(r"Member (\S+) in group \S+ has failed, removing it from the group"),
    re.compile(r"Member (\S+) fenced from the group because (.*?)\.?(?: \(org\.apache|$)"),
    re.compile(
        r"[Mm]ember (\S+) .*(?:removed|expired).*?"
        r"(session timeout|session expired|rebalance timeout)"
    ),
)
_STATIC_FENCED = (
    re.compile(  # classic
        r"Request memberId=(\S+) for static member with groupInstanceId=(\S+) is fenced by "
        r"existing memberId=(\S+)"
    ),
    re.compile(r"Static member (\S+) with instance id (\S+) is fenced by existing member (\S+?)\."),
)
_STATIC_REFUSED = re.compile(
    r"Static member (\S+) with instance id (\S+) cannot join the group because the instance id "
    r"is owned by member (\S+?)\."
)
#: Member ids a group's own lines name (a classic static member's is ``<instance id>-<uuid>``).
_MEMBER_ID = re.compile(r"[\w.-]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# KIP-848's online migration: a mixed group is a consumer group with classic members in it.
_CONVERTED = re.compile(r"Converted the (classic|consumer) group to an? (classic|consumer) group")
_JOINED_WITH = re.compile(
    r"Member (\S+) joins the consumer group using the (consumer|classic) protocol"
)
_INIT_ID = re.compile(r"Initialized transactionalId (\S+) with producerId (\d+)")
_ROLLBACK = re.compile(
    r"Completed rollback of ongoing transaction for transactionalId (\S+) due to timeout"
)
POLL_TIMEOUT = "poll timeout"

# A partition leader's own lines about its in-sync replicas and the writes it refuses for them
# (a refusal names the ISR's size in 4.x, "ISR : 1", and the set itself in 3.9, "ISR Set(1)").
_ISR_SHRINK = re.compile(
    r"\[Partition (\S+)-(\d+) broker=(\d+)\] Shrinking ISR from ([\d,]+) to ([\d,]+)\."
)
_NOT_ENOUGH_REPLICAS = re.compile(
    r"NotEnoughReplicasException: The size of the current ISR (?:: )?(?:Set\()?([\d, ]*)\)? is "
    r"insufficient to satisfy the min\.isr requirement of (\d+) for partition (\S+)-(\d+)"
)

#: A controller's line for a partition it gave a leader from outside its in-sync replicas
#: (each controller logs it as it replays the change), then the fields it changed.
_UNCLEAN = re.compile(r"UNCLEAN partition change for (\S+)-(\d+) with topic ID \S+: (.*)$")
_CHANGED = re.compile(r"(\w+): (\[[\d, ]*\]|-?\d+) -> (\[[\d, ]*\]|-?\d+)")


#: A broker closing a connection over a request it cannot read, then why (the next line).
_CLOSING = re.compile(r"Closing socket for \S+ because of error")
_UNSUPPORTED_VERSION = re.compile(
    r"UnsupportedVersionException: Received request for api with key (\d+) \((\w+)\) and "
    r"unsupported version (\d+)"
)


def _logs(log_files: Iterable[str | Path]) -> Iterator[list[str]]:
    """Each log's lines; a log that cannot be read (gone with its broker) is left out."""
    for path in log_files:
        try:
            yield Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue


def _timestamp(text: str) -> float:
    """A broker log time (the machine's local time, as the JVM writes it) in epoch seconds."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S,%f").timestamp()


def group_events(log_files: Iterable[str | Path], group: str) -> list[dict[str, Any]]:
    """The coordinators' events for ``group`` (and its ``<group>-tx-N`` transactional ids)."""
    events, members, unnamed = [], set(), []
    for lines in _logs(log_files):
        for line in lines:
            match = _LINE.match(line)
            if match is None:
                continue
            if group not in line:
                if (fenced := _STATIC_FENCED[0].search(match.group(2))) is not None:
                    unnamed.append((_timestamp(match.group(1)), fenced))
                continue
            members.update(_MEMBER_ID.findall(match.group(2)))
            event = _classify(match.group(2), group)
            if event is not None:
                events.append({"ts": _timestamp(match.group(1)), **event})
    events += [{"ts": ts, **_fenced(m)} for ts, m in unnamed if {m.group(1), m.group(3)} & members]
    return sorted(events, key=lambda e: e["ts"])


def _fenced(match: re.Match[str]) -> dict[str, Any]:
    return {
        "kind": "static_fenced",
        "member": match.group(1),
        "instance_id": match.group(2),
        "by": match.group(3),
    }


def _classify(message: str, group: str) -> dict[str, Any] | None:
    message = _MEMBER_METADATA.sub(r"\1", message)
    if (m := _LEAVE.search(message)) is not None:
        return {"kind": "leave", "member": m.group(1), "reason": m.group(2).strip()}
    if (m := _LEFT_CONSUMER_GROUP.search(message)) is not None:
        return {"kind": "leave", "member": m.group(1), "reason": "not provided"}
    if (m := _NEW_ASSIGNMENT.search(message)) is not None:
        return {"kind": "rebalance", "generation": int(m.group(1)), "reason": "new assignment"}
    if (m := _REBALANCE.search(message)) is not None:
        return {"kind": "rebalance", "generation": int(m.group(1)), "reason": m.group(2)}
    if (m := _STABILIZED.search(message)) is not None:
        return {"kind": "stabilized", "generation": int(m.group(1)), "members": int(m.group(2))}
    if (m := _EMPTY.search(message)) is not None:
        return {"kind": "empty", "generation": int(m.group(1))}
    for pattern in _REMOVED:
        if (m := pattern.search(message)) is not None:
            reason = m.group(2) if pattern.groups > 1 else "session timeout"
            return {"kind": "removed", "member": m.group(1), "reason": reason}
    if (m := _STATIC_FENCED[1].search(message)) is not None:
        return _fenced(m)
    if (m := _STATIC_REFUSED.search(message)) is not None:
        return {
            "kind": "static_refused",
            "member": m.group(1),
            "instance_id": m.group(2),
            "by": m.group(3),
        }
    if (m := _CONVERTED.search(message)) is not None:
        return {"kind": "converted", "from": m.group(1), "to": m.group(2)}
    if (m := _JOINED_WITH.search(message)) is not None:
        return {"kind": "joined", "member": m.group(1), "protocol": m.group(2)}
    if (m := _INIT_ID.search(message)) is not None and m.group(1).startswith(group):
        return {"kind": "producer_id", "transactional_id": m.group(1), "id": int(m.group(2))}
    if (m := _ROLLBACK.search(message)) is not None and m.group(1).startswith(group):
        return {"kind": "transaction_timeout", "transactional_id": m.group(1)}
    return None


def replica_events(
    log_files: Iterable[str | Path], topics: Iterable[str], elections: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The partition leaders' events for ``topics`` and the controllers' unclean elections of
    ``elections``' partitions, in time order:

    - ``isr_shrink``: a leader dropped followers from a partition's in-sync replicas
      (``topic``, ``partition``, ``broker``, ``isr_from``, ``isr_to``: node id lists);
    - ``not_enough_replicas``: a leader refused an acks=all write to a partition because it had
      fewer in-sync replicas than ``min.insync.replicas`` (``NOT_ENOUGH_REPLICAS``; ``topic``,
      ``partition``, ``min_isr``). Each refused produce request is one line, so one record
      retried until its delivery timeout counts once per try;
    - ``unclean_election``: the controller made a replica from outside a partition's in-sync
      replicas its leader (``topic``, ``partition``, ``leader``, ``leader_epoch``,
      ``isr_before``, and ``elr_before``: the eligible leader replicas it had, on a release
      with KIP-966's, else None), once however many controllers logged it.
    """
    names, elected = set(topics), set(elections)
    events = []
    seen: set[tuple[str, int, int]] = set()
    for lines in _logs(log_files):
        ts = 0.0
        for line in lines:
            if (stamped := _LINE.match(line)) is not None:
                ts = _timestamp(stamped.group(1))  # a stack trace's lines carry none of their own
            if not any(name in line for name in names | elected):
                continue
            if (m := _UNCLEAN.search(line)) is not None and m.group(1) in elected:
                if (event := _unclean(ts, m, seen)) is not None:
                    events.append(event)
            elif (m := _ISR_SHRINK.search(line)) is not None and m.group(1) in names:
                isr = [[int(n) for n in m.group(g).split(",") if n] for g in (4, 5)]
                at = {"topic": m.group(1), "partition": int(m.group(2)), "broker": int(m.group(3))}
                events.append(
                    {"ts": ts, "kind": "isr_shrink", **at, "isr_from": isr[0], "isr_to": isr[1]}
                )
            elif (m := _NOT_ENOUGH_REPLICAS.search(line)) is not None and m.group(3) in names:
                partition, min_isr = int(m.group(4)), int(m.group(2))
                events.append(
                    {
                        "ts": ts,
                        "kind": "not_enough_replicas",
                        "topic": m.group(3),
                        "partition": partition,
                        "min_isr": min_isr,
                    }
                )
    return sorted(events, key=lambda e: e["ts"])


def _unclean(
    ts: float, match: re.Match[str], seen: set[tuple[str, int, int]]
) -> dict[str, Any] | None:
    """An unclean election's event, or None when another controller's line gave it already."""
    changed = {name: (before, after) for name, before, after in _CHANGED.findall(match.group(3))}

    def value(text: str) -> Any:
        if "[" not in text:
            return int(text)
        return [int(n) for n in text.strip("[]").split(",") if n.strip()]

    topic, partition = match.group(1), int(match.group(2))
    epoch = value(changed["leaderEpoch"][1]) if "leaderEpoch" in changed else -1
    if (topic, partition, epoch) in seen:
        return None
    seen.add((topic, partition, epoch))
    return {
        "ts": ts,
        "kind": "unclean_election",
        "topic": topic,
        "partition": partition,
        "leader": value(changed["leader"][1]) if "leader" in changed else None,
        "leader_epoch": epoch,
        "isr_before": value(changed["isr"][0]) if "isr" in changed else None,
        "elr_before": value(changed["elr"][0]) if "elr" in changed else None,
    }


def refused_versions(log_files: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Each request a broker refused, closing the connection, because it does not serve its
    protocol version, in time order: ``refused_version`` (``api``, ``api_key``, ``version``).

    A client older than the broker supports sends them: Kafka 4.0 removed the versions clients
    before 2.1 use (KIP-896). The harness's own clients never do, so each one is the app's."""
    events = []
    for lines in _logs(log_files):
        ts, closing = 0.0, False
        for line in lines:
            if (stamped := _LINE.match(line)) is not None:
                ts, closing = _timestamp(stamped.group(1)), bool(_CLOSING.search(line))
            elif closing and (m := _UNSUPPORTED_VERSION.search(line)) is not None:
                api, key, version = m.group(2), int(m.group(1)), int(m.group(3))
                events.append(
                    {
                        "ts": ts,
                        "kind": "refused_version",
                        "api": api,
                        "api_key": key,
                        "version": version,
                    }
                )
                closing = False
    return sorted(events, key=lambda e: e["ts"])
