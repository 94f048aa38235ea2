"""Errors the cluster room raises, each carrying what a user needs to act on it."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """Base class for everything that goes wrong while providing Kafka."""


class ArtifactResolutionError(ClusterError):
    """The Kafka artifacts could not be resolved from Maven."""


class BrokerStartError(ClusterError):
    """A broker process did not come up; the message ends with its log tail."""


class BrokerDiedError(ClusterError):
    """A broker process that was running has exited; the message ends with its log tail."""


class NotApplicable(ClusterError):
    """This kind of cluster cannot give what an incident needs: the run does not apply to it.

    Reported as "not applicable" with this reason, never as a pass or a failure.
    """
