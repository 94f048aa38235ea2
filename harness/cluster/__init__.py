"""Real Kafka on demand: embedded KRaft brokers (default), containers, or an external cluster.

This room knows nothing else of the harness; everything else reaches Kafka through it.
"""

from .backends import BACKENDS, choose_backend, make_cluster
from .base import Cluster
from .embedded import BrokerNode, EmbeddedCluster
from .errors import (
    ArtifactResolutionError,
    BrokerDiedError,
    BrokerStartError,
    ClusterError,
)
from .external import ExternalCluster
from .nodes import NodeCluster
from .reaper import reap_orphans
from .versions import DEFAULT_KAFKA_VERSION, TESTED_KAFKA_VERSIONS, choose_version

__all__ = [
    "BACKENDS",
    "DEFAULT_KAFKA_VERSION",
    "TESTED_KAFKA_VERSIONS",
    "ArtifactResolutionError",
    "BrokerDiedError",
    "BrokerNode",
    "BrokerStartError",
    "Cluster",
    "ClusterError",
    "EmbeddedCluster",
    "ExternalCluster",
    "NodeCluster",
    "choose_backend",
    "choose_version",
    "make_cluster",
    "reap_orphans",
]
