"""Faults: what happens to the system during a run, done to real processes and real Kafka.

Each fault acts through the public API of the cluster and apps rooms and leaves its trace in
the run history through them (the supervisor records every signal it sends).
"""

from .actions import add_partitions, kill_at_random

__all__ = ["add_partitions", "kill_at_random"]
