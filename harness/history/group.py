"""What the group coordinator says about a consumer group right now (DescribeGroups)."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient

DESCRIBE_TIMEOUT_S = 5.0


def group_members(admin: AdminClient, group: str) -> int:
    """How many members the group has now; 0 when it is empty, unknown or unreachable."""
    try:
        description = admin.describe_consumer_groups([group], request_timeout=DESCRIBE_TIMEOUT_S)[
            group
        ].result()
    except KafkaException:
        return 0
    return len(description.members or [])


def group_stable(admin: AdminClient, group: str) -> bool:
    """Whether the group has finished a rebalance with members: for brokers whose group
    descriptions name no members (Tansu), the one sign that an app has joined."""
    try:
        description = admin.describe_consumer_groups([group], request_timeout=DESCRIBE_TIMEOUT_S)[
            group
        ].result()
    except KafkaException:
        return False
    return description.state == ConsumerGroupState.STABLE
