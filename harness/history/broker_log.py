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
- ``producer_id``: a transactional id of the app was given a producer id; a new id for a
  transactional id that had one means the old one was expired (an epoch bump keeps the id);
- ``transaction_timeout``: the coordinator rolled back a transaction of the app that outlived
  its ``transaction.timeout.ms`` (an app killed mid-transaction that never came back with the
  same transactional id leaves one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{3})\] \w+ (.*)$")
_LEAVE = re.compile(
    r"Member (\S+) has left group through explicit `LeaveGroup` request; client reason: (.*?)"
    r"(?: \(org\.apache|$)"
)
# The KIP-848 ``consumer`` protocol's coordinator words the same events its own way.
_LEFT_CONSUMER_GROUP = re.compile(r"Member (\S+) left the consumer group")
_NEW_ASSIGNMENT = re.compile(r"Computed a new target assignment for epoch (\d+)")
_REBALANCE = re.compile(r"Preparing to rebalance group \S+ .*old generation (\d+) \(reason: (.*)\)")
_STABILIZED = re.compile(r"Stabilized group \S+ generation (\d+) with (\d+) members")
_REMOVED = (
    re.compile(r"Member (\S+) in group \S+ has failed, removing it from the group"),
    re.compile(r"Member (\S+) fenced from the group because (.*?)\.?(?: \(org\.apache|$)"),
    re.compile(
        r"[Mm]ember (\S+) .*(?:removed|expired).*?"
        r"(session timeout|session expired|rebalance timeout)"
    ),
)
_INIT_ID = re.compile(r"Initialized transactionalId (\S+) with producerId (\d+)")
_ROLLBACK = re.compile(
    r"Completed rollback of ongoing transaction for transactionalId (\S+) due to timeout"
)
POLL_TIMEOUT = "poll timeout"


def _timestamp(text: str) -> float:
    """A broker log time (the machine's local time, as the JVM writes it) in epoch seconds."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S,%f").timestamp()


def group_events(log_files: Iterable[str | Path], group: str) -> list[dict[str, Any]]:
    """The coordinators' events for ``group`` (and its ``<group>-tx-N`` transactional ids)."""
    events = []
    for path in log_files:
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if group not in line:
                continue
            match = _LINE.match(line)
            if match is not None:
                event = _classify(match.group(2), group)
                if event is not None:
                    events.append({"ts": _timestamp(match.group(1)), **event})
    return sorted(events, key=lambda e: e["ts"])


def _classify(message: str, group: str) -> dict[str, Any] | None:
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
    for pattern in _REMOVED:
        if (m := pattern.search(message)) is not None:
            reason = m.group(2) if pattern.groups > 1 else "session timeout"
            return {"kind": "removed", "member": m.group(1), "reason": reason}
    if (m := _INIT_ID.search(message)) is not None and m.group(1).startswith(group):
        return {"kind": "producer_id", "transactional_id": m.group(1), "id": int(m.group(2))}
    if (m := _ROLLBACK.search(message)) is not None and m.group(1).startswith(group):
        return {"kind": "transaction_timeout", "transactional_id": m.group(1)}
    return None
