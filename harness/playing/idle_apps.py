"""Which app instances hold no partition, from what they reported: said beside a wait that
timed out on the app's requests, since an instance that was never given a partition sends none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_replay.history.store import APP_PREFIX, RunHistory

#: Shorter idles are a rebalance's ordinary pause, not worth a word.
WORTH_SAYING_S = 10.0


def _partitions(event: dict[str, Any]) -> set[tuple[str, int]]:
    return {(p["topic"], p["partition"]) for p in event.get("partitions") or ()}


def idle_since(events: Iterable[dict[str, Any]]) -> float | None:
    """When an instance's newest process last held nothing (its start, or the revocation that
    emptied it); None when it holds partitions now. ``events``: its starts (from the
    lifecycle) and its own reports, in time order.

    Assignments add and revocations remove, which reads both eager and cooperative protocols.
    """
    process: Any = None
    held: set[tuple[str, int]] = set()
    since: float | None = None
    for event in events:
        if event.get("pid") != process or event.get("kind") == "start":
            process, held, since = event.get("pid"), set(), event["ts"]
        if event.get("kind") == "assigned":
            held |= _partitions(event)
        elif event.get("kind") == "revoked":
            held -= _partitions(event)
            if not held:
                since = event["ts"]
    return None if held else since


def _stream_name(start: dict[str, Any]) -> str:
    """The stream an instance reports to: ``app-<instance>``, ``app-<service>-<instance>``."""
    service = f"{start['app']}-" if start.get("app") else ""
    return f"{APP_PREFIX}{service}{start['instance']}"


def idle_apps(history: RunHistory, now: float) -> str | None:
    """``app-0 has held no partition for 95 s``, for each reporting instance idle long enough;
    None when none is (or none reports)."""
    starts: dict[str, list[dict[str, Any]]] = {}
    for event in history.read("lifecycle"):
        if event.get("kind") == "start":
            starts.setdefault(_stream_name(event), []).append(event)
    said = []
    for name in history.app_stream_names():
        events = sorted([*starts.get(name, ()), *history.read(name)], key=lambda e: e["ts"])
        since = idle_since(events)
        if since is not None and now - since >= WORTH_SAYING_S:
            said.append(f"{name} has held no partition for {now - since:.0f} s")
    return "; ".join(said) or None
