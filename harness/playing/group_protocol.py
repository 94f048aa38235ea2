"""Whether a cluster can take the KIP-848 ``consumer`` group protocol an incident rolls onto.

An incident that moves instances to ``group.protocol = consumer`` (``restart_instance`` with
that setting, or a profile's ``[client]``) tests the online migration of a classic group into a
consumer group: on a broker that has the protocol off there is nothing to migrate to, and the
migrated members never join. Kafka turns it on by default from 4.0 (``group.version`` 1);
3.7 to 3.9 had it as early access or preview, off by default, so such runs do not apply there.
A cluster whose release the harness does not know (an external one, another vendor's broker)
is given the benefit of the doubt: its own settings decide, and the run is judged.
"""

from __future__ import annotations

from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import Incident, Profile

#: The first Kafka release whose clusters take the consumer group protocol by default.
CONSUMER_PROTOCOL_SINCE = (4, 0)


def moves_to_consumer_protocol(incident: Incident, profile: Profile) -> bool:
    """Whether the profile's client or any step gives an instance ``group.protocol=consumer``."""
    if profile.client.get("group.protocol") == "consumer":
        return True
    return any(
        (step.options.get("client") or {}).get("group.protocol") == "consumer"
        for step in incident.steps
    )


def consumer_protocol_missing(cluster: Cluster) -> str | None:
    """Why the cluster has no consumer group protocol by default, or None when it has or may."""
    if not cluster.runs_kafka:
        return None
    version = cluster.version
    try:
        release = tuple(int(part) for part in str(version).split(".")[:2])
    except ValueError:
        return None
    if len(release) == 2 and release < CONSUMER_PROTOCOL_SINCE:
        return (
            f"Kafka {version} has KIP-848's consumer group protocol off by default (generally "
            "available and on from 4.0; 3.7 to 3.9 had it only as early access or preview)"
        )
    return None
