"""The run history: one append-only record of everything that happened in a run.

This room depends on no other part of the harness; Kafka is reached by bootstrap address.
The format is documented in docs/history.md.
"""

from .consumer_offsets import OffsetCommitRecord, OffsetsRecorder, coordinator_partition
from .lag import LagSampler, sample_lag
from .store import EventStream, RunHistory, read_stream

__all__ = [
    "EventStream",
    "LagSampler",
    "OffsetCommitRecord",
    "OffsetsRecorder",
    "RunHistory",
    "coordinator_partition",
    "read_stream",
    "sample_lag",
]
