"""What every Kafka backend offers: an address, an admin client, topics, logs and a stop."""

from __future__ import annotations

import logging
import secrets
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_replay.servers.lifecycle import Server
from kafka_replay.waiting import poll, wait_for

from .client_log import client_log

log = logging.getLogger(__name__)

TOPIC_READY_TIMEOUT_S = 30.0
#: Local errors of a request that never had its answer: asking again is safe.
UNANSWERED = (KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT)


class Cluster(Server):
    """A running Kafka cluster the harness may use; subclasses say how it is provided."""

    #: Kafka release the brokers run, when the harness knows it.
    version: str | None = None
    #: The backend that started it (``--kafka-backend NAME``); None for a cluster the harness
    #: does not run (an external one).
    backend: ClassVar[str | None] = None
    #: Whether it runs Apache Kafka at a release the harness chose (``version``); a vendor's
    #: broker and an external cluster do not.
    runs_kafka: ClassVar[bool] = False
    #: Names the harness creates start with this, so they never collide and can be cleaned up.
    topic_prefix: str = ""
    #: Whether the cluster can be given broker settings (``server.properties``) for a run.
    takes_broker_settings: ClassVar[bool] = True
    #: Whether clients can read committed offsets as Kafka's ``__consumer_offsets`` records.
    has_offsets_topic: ClassVar[bool] = True
    #: Whether a group's description names its members (how the harness sees an app join).
    lists_group_members: ClassVar[bool] = True
    #: What this kind of cluster cannot do (names from :mod:`.capabilities`), each with the
    #: reason; a step that needs one of them does not apply to it.
    lacks: ClassVar[Mapping[str, str]] = {}
    #: Feature levels the harness formatted its storage with, over the release's own.
    features: Mapping[str, int] = {}

    @classmethod
    def features_refused(cls, version: str | None) -> str | None:
        """Why this kind of cluster, at this release, cannot be formatted with feature levels
        a definition chooses (``[features]``); None when it can."""
        return "the harness does not format its storage"

    @classmethod
    def unsupported(cls, brokers: int, network_faults: bool) -> str | None:
        """Why this kind of cluster cannot be had with that many brokers or with proxies."""
        return None

    def __init__(self) -> None:
        self._admin: AdminClient | None = None
        self._created_topics: list[str] = []

    @property
    @abstractmethod
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port...]`` for clients."""

    @property
    def label(self) -> str:
        """What the cluster is, in a few words, for messages."""
        return f"Kafka {self.version}" if self.version else type(self).__name__

    @property
    def client_bootstrap_servers(self) -> str:
        """Where the app and the workload producer connect (behind proxies, if there are any)."""
        return self.bootstrap_servers

    def start(self) -> Self:
        """Start the cluster where the harness runs one (a cluster it is given is there)."""
        return self

    @abstractmethod
    def stop(self) -> None:
        """Release the cluster; safe to call twice."""

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the brokers' logs, where the harness has them."""
        return ""

    def log_files(self) -> list[str]:
        return []

    def coordinator_logs(self) -> list[str]:
        """Logs in which Kafka's group and transaction coordinators say what they did."""
        return self.log_files()

    def check_alive(self) -> None:
        """Raise if a broker the harness started has died."""

    def client_config(self, **extra: Any) -> dict[str, Any]:
        """A confluent-kafka config pointing at this cluster, logging through :mod:`logging`."""
        return {"bootstrap.servers": self.bootstrap_servers, "logger": client_log, **extra}

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self.client_config())
        return self._admin

    def unique_name(self, base: str) -> str:
        """A topic or group name nobody else in this cluster uses."""
        return f"{self.topic_prefix}{base}-{secrets.token_hex(4)}"

    def create_topic(
        self,
        base: str = "topic",
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, str] | None = None,
        timeout: float = TOPIC_READY_TIMEOUT_S,
    ) -> str:
        """Create a uniquely named topic and wait until every partition has a leader."""
        name = self.unique_name(base)
        new = NewTopic(name, partitions, replication_factor, config=dict(config or {}))
        self._create(new, timeout)
        self._created_topics.append(name)
        self.wait_for_leaders(name, partitions, timeout)
        return name

    def _create(self, new: NewTopic, timeout: float) -> None:
        """Ask for ``new`` until an answer comes: a request whose broker connection librdkafka
        dropped before the answer (``_DESTROY_BROKER``: a bootstrap connection given up once the
        cluster's brokers are known, on a cluster that has just started) is asked again. "Already
        exists" is an earlier request's doing, ours or librdkafka's own retry of it after a
        request timed out on a loaded machine: the name is this object's own, made unique."""
        unanswered: list[KafkaException] = []  # each try whose answer never came

        def created() -> bool:
            try:
                future = self.admin().create_topics([new], operation_timeout=timeout)[new.topic]
                future.result(timeout)
                return True
            except KafkaException as exc:
                code = exc.args[0].code()
                if code == KafkaError.TOPIC_ALREADY_EXISTS:
                    return True
                if code not in UNANSWERED:
                    raise
                log.info("creating topic %s again: %s", new.topic, exc)
                unanswered.append(exc)
                return False

        if poll(created, timeout, every_s=0) is None:
            raise unanswered[-1]

    def delete_topics(self, names: list[str], timeout: float = TOPIC_READY_TIMEOUT_S) -> None:
        """Delete topics, logging (not raising) any that could not be deleted."""
        if not names:
            return
        futures = self.admin().delete_topics(names, operation_timeout=timeout)
        for name, future in futures.items():
            try:
                future.result(timeout)
            except KafkaException as exc:
                log.warning("could not delete topic %s: %s", name, exc)
        self._created_topics = [n for n in self._created_topics if n not in names]

    def delete_created_topics(self) -> None:
        """Delete every topic this object created (and nothing else)."""
        self.delete_topics(list(self._created_topics))

    def metadata_admins(self) -> list[AdminClient]:
        """Clients whose metadata answers must all show a change before it counts as made."""
        return [self.admin()]

    def wait_for_leaders(self, topic: str, partitions: int, timeout: float) -> None:
        """Wait until ``topic`` has ``partitions`` partitions, each with a leader, everywhere.

        Every client of :meth:`metadata_admins` must see it: a broker learns of a new topic from
        the controller a moment after another one does, and a client asking it would not find
        the topic yet.
        """
        admins = self.metadata_admins()
        ends = time.monotonic() + timeout  # each metadata request gets what is left, 1 s at least

        def led() -> bool:
            left = max(ends - time.monotonic(), 1.0)
            return all(_has_leaders(admin, topic, partitions, left) for admin in admins)

        missing = f"topic {topic} has no leader for every partition on every broker in {timeout}s"
        wait_for(led, timeout, missing)


def _has_leaders(admin: AdminClient, topic: str, partitions: int, timeout: float) -> bool:
    """Whether ``admin``'s metadata shows ``topic`` with ``partitions`` partitions, all led."""
    try:
        metadata = admin.list_topics(topic, timeout=timeout).topics.get(topic)
    except KafkaException:
        return False
    return (
        metadata is not None
        and metadata.error is None
        and len(metadata.partitions) == partitions
        and all(p.leader >= 0 for p in metadata.partitions.values())
    )


@dataclass(frozen=True)
class ClusterNeeds:
    """What a run needs of the cluster it plays on, from its definition: its broker settings,
    nodes, a proxy in front of each broker (for network faults) and feature levels
    (``[features]``)."""

    broker_config: Mapping[str, Any] = field(default_factory=dict)
    brokers: int = 1
    network_faults: bool = False
    features: Mapping[str, int] = field(default_factory=dict)


#: ``cluster_for(needs)``: the cluster a run plays on.
ClusterFor = Callable[[ClusterNeeds], Cluster]
