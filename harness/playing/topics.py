"""A run's topics: created as its definition names them, each with its profile's settings,
and deleted when the run ends (its broker logs keep what they held)."""

from __future__ import annotations

from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import Incident, Profile


def create_topics(cluster: Cluster, incident: Incident, profile: Profile) -> dict[str, str]:
    """Every topic of ``incident`` created on ``cluster``: the name each role or service reads
    it by, to the topic as created (a cluster may name it apart from another run's)."""
    replicas = min(3, incident.brokers)  # what a broker fault needs to keep the data
    created = {
        name: cluster.create_topic(
            f"{incident.name}-{name}",
            partitions,
            min(incident.replicas.get(name, replicas), incident.brokers),
            _topic_config(profile, name),
        )
        for name, partitions in incident.topics.items()
    }
    return {name: created[topic] for name, topic in incident.topic_names().items()}


def delete_topics(cluster: Cluster, topics: dict[str, str]) -> None:
    """The run's topics deleted, each once (two names may be one topic)."""
    cluster.delete_topics(sorted(set(topics.values())))


def _topic_config(profile: Profile, name: str) -> dict[str, str]:
    """A topic's ``[topic_config.NAME]`` as the broker takes it: every value as text."""
    config = profile.topic_config.get(name, {})
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.items()}
