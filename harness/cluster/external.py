"""A cluster someone else runs, reached by its bootstrap address."""

from __future__ import annotations

import secrets
import socket
from collections.abc import Mapping
from typing import ClassVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from .base import Cluster
from .errors import ClusterError

#: How long a broker at the address gets to answer a metadata request before a run starts.
ANSWER_TIMEOUT_S = 10.0


class ExternalClusterUnreachable(ClusterError):
    """No Kafka broker answers at the bootstrap address a user gave."""


class ExternalCluster(Cluster):
    """An existing cluster: the harness only creates and deletes its own prefixed topics."""

    takes_broker_settings = False
    lacks: ClassVar[Mapping[str, str]] = {
        capability: "the harness does not run an external cluster's brokers"
        for capability in ("restart_brokers", "pause_brokers")
    }

    def __init__(self, bootstrap_servers: str) -> None:
        super().__init__()
        self._bootstrap = bootstrap_servers
        self.topic_prefix = f"kafka-replay-{secrets.token_hex(3)}-"

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def label(self) -> str:
        return f"the external cluster at {self._bootstrap}"

    def check_reachable(self, timeout: float = ANSWER_TIMEOUT_S) -> None:
        """Raise :class:`ExternalClusterUnreachable`, naming the address, unless a broker answers.

        Without this a run would wait for its first topic as long as librdkafka retries (30 s
        and more) and then fail with an empty timeout. A refused connection fails at once.
        """
        refused = []
        for address in self._bootstrap.split(","):
            host, _, port = address.strip().rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=timeout).close()
                break
            except (OSError, ValueError) as exc:
                refused.append(f"{address.strip()}: {exc}")
        else:
            raise ExternalClusterUnreachable(
                f"no Kafka broker answers at {self._bootstrap} ({'; '.join(refused)}): check the "
                "address given to --kafka-bootstrap, and that the cluster is up"
            )
        admin = AdminClient({"bootstrap.servers": self._bootstrap, "log_level": 0})
        try:
            admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            raise ExternalClusterUnreachable(
                f"nothing at {self._bootstrap} answered a Kafka metadata request within "
                f"{timeout:.0f}s ({_reason(exc)}): check the address given to --kafka-bootstrap "
                "(a Kafka listener, host:port), and that the cluster is up"
            ) from None

    def stop(self) -> None:
        self.delete_created_topics()

    def __repr__(self) -> str:
        return f"ExternalCluster({self._bootstrap!r}, prefix={self.topic_prefix!r})"


def _reason(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else exc
    return error.str() if hasattr(error, "str") else str(error)
