"""The reason a share group's run gives for inputs the broker archived (KIP-932).

Judging writes it (:func:`.played.rule`) after the pass/fail rule's own reasons, so a
played run and a stored one judged again (:mod:`.rejudge`) say it from the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Kafka's default ``group.share.delivery.count.limit`` (KIP-932), when the profile sets none.
DEFAULT_DELIVERY_LIMIT = 5


def delivery_limit(broker: Mapping[str, Any]) -> int:
    """The profile's ``group.share.delivery.count.limit`` (Kafka's default when unset)."""
    return int(broker.get("group.share.delivery.count.limit", DEFAULT_DELIVERY_LIMIT))


def archived_reason(symptoms: Mapping[str, Any], broker: Mapping[str, Any]) -> str:
    """The report's line on inputs the broker archived, naming the limit that archived them."""
    limit = delivery_limit(broker)
    return (
        f"{symptoms['archived_at_limit']} inputs were archived by the broker with no result "
        f"in the output: their delivery count reached group.share.delivery.count.limit = "
        f"{limit}, and a share group archives such a record without telling any consumer"
    )
