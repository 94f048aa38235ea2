"""Real Kafka on demand: registered backends (embedded KRaft brokers by default, containers,
Tansu, a team's own) or an external cluster.

This room knows nothing else of the harness; everything else reaches Kafka through it.

Names are imported on first use, so a light part of this package (its constants) never
pays for the heavy ones (Spark, testcontainers).
"""

from __future__ import annotations

from kafka_replay.lazy import lazy_exports

_EXPORTS = {
    "ArtifactResolutionError": ".errors",
    "BrokerDiedError": ".errors",
    "BrokerNode": ".embedded",
    "BrokerStartError": ".errors",
    "Cluster": ".base",
    "ClusterError": ".errors",
    "DEFAULT_KAFKA_VERSION": ".versions",
    "EmbeddedCluster": ".embedded",
    "ExternalCluster": ".external",
    "NodeCluster": ".nodes",
    "TESTED_KAFKA_VERSIONS": ".versions",
    "backends": ".backends",
    "choose_backend": ".backends",
    "choose_version": ".versions",
    "make_cluster": ".backends",
    "register_backend": ".backends",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
