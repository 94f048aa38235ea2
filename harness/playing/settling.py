"""Before a run is checked: no open transaction may hold what it reads, or the run says which.

A transaction left open by a killed app holds its partitions' last stable offset until its
coordinator aborts it, and a read_committed read stops there: read too soon, later committed
outputs look lost. So the check waits, at most as long as such a transaction can last
(:func:`~kafka_replay.history.stable_offsets.settle_timeout_s`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import WRITTEN_ROLES, Incident
from kafka_replay.faults import holders
from kafka_replay.history import RunHistory
from kafka_replay.history.stable_offsets import settle, settle_timeout_s


def written(incident: Incident, topics: Mapping[str, str]) -> list[str]:
    """The topics the app writes, as created: a transaction it leaves open holds them."""
    return [topics[name] for name in incident.topics if incident.role(name) in WRITTEN_ROLES]


def settle_outputs(
    cluster: Cluster,
    outputs: list[str],
    history: RunHistory,
    timeout_s: float | None,
    settings: tuple[Mapping[str, Any], Mapping[str, Any]],
    progress: Callable[[str], None],
) -> list[str]:
    """Wait until no open transaction holds one of ``outputs`` (at most ``timeout_s``, by
    default as long as the app's transactions can last under its client and broker
    ``settings``); record what was found, and return a reason for each partition still held.
    """
    if timeout_s is None:
        timeout_s = settle_timeout_s(dict(settings[0]), dict(settings[1]))
    waited, still_held = settle(cluster.admin(), outputs, timeout_s)
    if waited >= 1.0 or still_held:
        progress(f"waited {waited:.0f}s for open transactions to end")
    event: dict[str, Any] = {"kind": "settled", "waited_s": waited, "held": still_held}
    if still_held:
        event["open"] = holders(cluster.bootstrap_servers, still_held)
    history.stream("transactions").append(event)
    return [_held_reason(row, event.get("open", [])) for row in still_held]


def _held_reason(row: Mapping[str, Any], found: list[dict[str, Any]]) -> str:
    """One partition still held by an open transaction when the output was read, and by whom."""
    said = f"output partition {row['topic']}/{row['partition']} was still held by an open "
    said += f"transaction when the check read it: {row['held']} records past offset {row['lso']}"
    for holder in found:
        if (holder.get("topic"), holder.get("partition")) == (row["topic"], row["partition"]):
            since = holder.get("started_ms") or holder.get("last_write_ms")
            began = time.strftime("%H:%M:%S", time.localtime(since / 1000)) if since else "?"
            said += (
                f", producer id {holder['producer_id']} (transactional id "
                f"{holder.get('transactional_id') or 'unknown'}), open since {began}"
            )
    return said
