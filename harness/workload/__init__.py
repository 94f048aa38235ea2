"""Realistic, seeded inputs stamped with identity, and the producer that records their acks.

It may import :mod:`kafka_replay.apps` (a team's ``module:function`` generator, loaded as
apps are), :mod:`kafka_replay.servers` (the schema registry's process and the JVM producer),
the checker's Spark session (a capture's anonymizing job) and :mod:`kafka_replay.file_lock`;
no other room of the harness.
"""

from .generators import (
    GENERATORS,
    deal_flood,
    generator,
    profile_changes,
    quiet_events,
    quiet_then_wake,
    student_onboarding,
)
from .partitioner import java_partition, murmur2
from .payloads import Payload
from .producer import ProduceStats, WorkloadProducer
from .records import EVENT_ID_HEADER, Pause, Workload, WorkloadRecord

__all__ = [
    "EVENT_ID_HEADER",
    "GENERATORS",
    "Pause",
    "Payload",
    "ProduceStats",
    "Workload",
    "WorkloadProducer",
    "WorkloadRecord",
    "deal_flood",
    "generator",
    "java_partition",
    "murmur2",
    "profile_changes",
    "quiet_events",
    "quiet_then_wake",
    "student_onboarding",
]
