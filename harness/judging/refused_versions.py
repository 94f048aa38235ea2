"""Requests the brokers refused for a protocol version they do not serve, in a run's reasons.

An upgrade's most silent break: Kafka 4.0 removed the protocol versions of clients older than
2.1 (KIP-896), and such a client, refused, only retries; the run then ends with inputs unseen
and nothing else to say why. The brokers' logs name each refused request's API and version
(:func:`kafka_replay.history.broker_log.refused_versions`); the run says them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any


def refused_counts(events: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How often each ``API vN`` was refused, the most refused first."""
    counts = Counter(f"{event['api']} v{event['version']}" for event in events)
    return dict(counts.most_common())


def refused_reason(counts: Mapping[str, int]) -> str:
    """The run's reason: what the brokers refused, and what it means."""
    said = ", ".join(f"{what} ({count} times)" for what, count in counts.items())
    return (
        f"the brokers refused the app's client for protocol versions they do not serve: {said} "
        "(a client older than the brokers support: Kafka 4.0 removed the versions of clients "
        "before 2.1, KIP-896)"
    )
