"""What a backend may be unable to do, by name: steps say which they need, backends which they lack.

The names are the cluster's own words (what a broker or its admin API can do), so this room
still knows nothing of the replay engine: a step of the engine declares the capability it needs
(``@step_kind(..., needs="restart_brokers")``) and a backend declares the ones it lacks, each
with the reason (``lacks = {"restart_brokers": "..."}``).
"""

from __future__ import annotations

CAPABILITIES = {
    "create_partitions": "add partitions to an existing topic (the CreatePartitions API)",
    "restart_brokers": "kill a broker and start it again with its data kept",
    "pause_brokers": "pause a broker's process and resume it",
    "transaction_admin": "find another producer's open transaction and abort it "
    "(the DescribeProducers, ListTransactions and WriteTxnMarkers APIs)",
}
