"""Faults: what happens to the system during a run, done to real processes and real Kafka.

Each fault acts through the public API of the cluster and apps rooms and leaves its trace in
the run history through them (the supervisor records every signal it sends; broker and network
faults return what they did and the partition leaders before and after). It may import
:mod:`kafka_replay.apps`, :mod:`kafka_replay.cluster`, :mod:`kafka_replay.history`,
:mod:`kafka_replay.servers` (its JVM tools) and :mod:`kafka_replay.workload`; never the engine.
"""

from .actions import add_partitions, kill_at_random
from .brokers import (
    ROLES,
    BrokerFaultError,
    BrokerFaults,
    group_offsets_holders,
    led_partition,
    next_leader,
)
from .network import DIRECTIONS, FAULTS, NETWORK_ROLES, NetworkFaults, toxic_attributes
from .requests import ACTIONS, CLIENTS, RequestFaults
from .transactions import (
    TransactionAdminError,
    abort_hanging,
    abort_transactions,
    describe_transactions,
    holders,
)

__all__ = [
    "ACTIONS",
    "CLIENTS",
    "DIRECTIONS",
    "FAULTS",
    "NETWORK_ROLES",
    "ROLES",
    "BrokerFaultError",
    "BrokerFaults",
    "NetworkFaults",
    "RequestFaults",
    "TransactionAdminError",
    "abort_hanging",
    "abort_transactions",
    "add_partitions",
    "describe_transactions",
    "group_offsets_holders",
    "holders",
    "kill_at_random",
    "led_partition",
    "next_leader",
    "toxic_attributes",
]
