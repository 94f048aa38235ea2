"""Errors the cluster room raises, each carrying what a user needs to act on it.

What can go wrong under any local server (Maven's jars, a JVM, Docker) is a
:class:`~kafka_replay.servers.server_errors.ServerError`, which :class:`ClusterError` extends;
:class:`ArtifactResolutionError` is served here too, as before.
"""

from __future__ import annotations

from kafka_replay.servers.server_errors import ArtifactResolutionError, ServerError

__all__ = [
    "ArtifactResolutionError",
    "BrokerDiedError",
    "BrokerStartError",
    "ClusterError",
    "NotApplicable",
]


class ClusterError(ServerError):
    """Base class for everything that goes wrong while providing Kafka."""


class BrokerStartError(ClusterError):
    """A broker process did not come up; the message ends with its log tail."""


class BrokerDiedError(ClusterError):
    """A broker process that was running has exited; the message ends with its log tail."""


class NotApplicable(ClusterError):
    """This kind of cluster cannot give what an incident needs: the run does not apply to it.

    Reported as "not applicable" with this reason, never as a pass or a failure.
    """
