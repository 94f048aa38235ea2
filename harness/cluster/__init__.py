"""Real Kafka on demand: registered backends (embedded KRaft brokers by default, containers,
Tansu, a team's own) or an external cluster.

Everything else reaches Kafka through this room. It stands on :mod:`kafka_replay.servers`
(processes, Maven, JVMs, containers) and the small shared utilities
(:mod:`kafka_replay.file_lock`, :mod:`kafka_replay.jvm_archive`, :mod:`kafka_replay.lazy`,
:mod:`kafka_replay.plugins` for a team's backends), nothing else of the harness.

Names are imported on first use, so a light part of this package (its constants) never
pays for the heavy ones (Spark, testcontainers).
"""

from __future__ import annotations

from kafka_replay.lazy import lazy_package

__all__, __getattr__ = lazy_package(
    __name__,
    {
        ".backends": "backends choose_backend make_cluster register_backend",
        ".base": "Cluster ClusterFor ClusterNeeds",
        ".embedded": "BrokerNode EmbeddedCluster",
        ".errors": "ArtifactResolutionError BrokerDiedError BrokerStartError ClusterError",
        ".external": "ExternalCluster",
        ".nodes": "NodeCluster",
        ".versions": "DEFAULT_KAFKA_VERSION TESTED_KAFKA_VERSIONS choose_version",
    },
)
