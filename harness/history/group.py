"""What the group coordinator says about a consumer group right now (DescribeGroups)."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

DESCRIBE_TIMEOUT_S = 5.0


def describe_group(admin: AdminClient, group: str) -> ConsumerGroupDescription | None:
    """The group's description; None when the coordinator cannot be asked now."""
    try:
        return admin.describe_consumer_groups([group], request_timeout=DESCRIBE_TIMEOUT_S)[
            group
        ].result()
    except KafkaException:
        return None


def group_members(admin: AdminClient, group: str) -> int:
    """How many members the group has now; 0 when it is empty, unknown or unreachable."""
    description = describe_group(admin, group)
    return len(description.members or []) if description is not None else 0


def group_stable(admin: AdminClient, group: str) -> bool:
    """Whether the group has finished a rebalance with members: for brokers whose group
    descriptions name no members (Tansu), the one sign that an app has joined."""
    description = describe_group(admin, group)
    return description is not None and description.state == ConsumerGroupState.STABLE
