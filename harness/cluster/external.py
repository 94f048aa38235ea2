"""A cluster someone else runs, reached by its bootstrap address."""

from __future__ import annotations

import secrets

from .base import Cluster


class ExternalCluster(Cluster):
    """An existing cluster: the harness only creates and deletes its own prefixed topics."""

    def __init__(self, bootstrap_servers: str) -> None:
        super().__init__()
        self._bootstrap = bootstrap_servers
        self.topic_prefix = f"kafka-replay-{secrets.token_hex(3)}-"

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    def stop(self) -> None:
        self.delete_created_topics()

    def __repr__(self) -> str:
        return f"ExternalCluster({self._bootstrap!r}, prefix={self.topic_prefix!r})"
