"""Realistic, seeded inputs stamped with identity, and the producer that records their acks."""

from .generators import deal_flood, quiet_events, quiet_then_wake, student_onboarding
from .partitioner import java_partition, murmur2
from .producer import ProduceStats, WorkloadProducer
from .records import EVENT_ID_HEADER, Pause, Workload, WorkloadRecord

__all__ = [
    "EVENT_ID_HEADER",
    "Pause",
    "ProduceStats",
    "Workload",
    "WorkloadProducer",
    "WorkloadRecord",
    "deal_flood",
    "java_partition",
    "murmur2",
    "quiet_events",
    "quiet_then_wake",
    "student_onboarding",
]
