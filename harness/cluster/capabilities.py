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
    "retention": "delete records from the start of a topic's log by its retention.ms, moving "
    "the log start offset past them",
    "compaction": "compact a topic with cleanup.policy=compact: remove the records a later one "
    "of their key superseded, and tombstones after delete.retention.ms",
    "transactions": "commit and abort transactions (the AddPartitionsToTxn, AddOffsetsToTxn, "
    "TxnOffsetCommit and EndTxn APIs)",
    "share_groups": "consume as a share group (KIP-932: ShareGroupHeartbeat, ShareFetch, "
    "ShareAcknowledge, DescribeShareGroupOffsets), on by default from Kafka 4.2",
}
#: The first Kafka release whose clusters have share groups on by default (KIP-932 GA; 4.0 had
#: an early access behind ``group.share.enable``, 4.1 a preview behind ``share.version``).
SHARE_GROUPS_SINCE = (4, 2)


def lacks_by_version(version: str | None) -> dict[str, str]:
    """What a Kafka release cannot do that later ones can, each with the reason (an unknown
    release, such as an external cluster's, is taken to have everything)."""
    try:
        release = tuple(int(part) for part in (version or "").split(".")[:2])
    except ValueError:
        return {}
    if len(release) == 2 and release < SHARE_GROUPS_SINCE:
        return {
            "share_groups": f"Kafka {version} has no share groups on by default (KIP-932 is "
            "generally available from 4.2; 4.0 and 4.1 had it only as early access or preview)"
        }
    return {}
