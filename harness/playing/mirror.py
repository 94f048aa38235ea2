"""A run's mirror (``[mirror]``): a second cluster beside the run's, its input topics there under
the same names, and MirrorMaker 2 copying their records and the run's groups' offsets to it, as
a team's disaster-recovery cluster is fed (the ``fail_over`` step that moves the apps there is
:mod:`.failover`).

The mirror is started for the run and stopped with it (never pooled: what MirrorMaker 2 wrote
there is the run's), its brokers' logs and MirrorMaker 2's in the run's ``mirror/`` directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import NewTopic

from kafka_replay.apps.mirror_maker import STOP_GRACE_S, MirrorMaker
from kafka_replay.cluster import Cluster
from kafka_replay.cluster.backends import make_cluster
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.definitions.model import Incident, Mirror
from kafka_replay.history import RunHistory

#: How long the mirror's topics get to have leaders.
TOPIC_TIMEOUT_S = 60.0


@dataclass
class RunMirror:
    """The run's mirror cluster and the MirrorMaker 2 worker feeding it."""

    cluster: Cluster
    maker: MirrorMaker | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    def stop_mirroring(self, grace: float = STOP_GRACE_S) -> None:
        """Stop MirrorMaker 2 (``grace`` 0: SIGKILL at once, as with its source lost)."""
        if self.maker is not None:
            self.maker.stop(grace)

    def release(self) -> list[str]:
        """Stop MirrorMaker 2 and the mirror's brokers (their logs stay); never raises."""
        failed = []
        self.stop_mirroring()
        try:
            self.cluster.stop()
        except Exception as exc:  # said in the outcome, never hiding it
            failed.append(f"stopping the mirror cluster failed: {exc}")
        return failed


def start_mirror(
    spec: Mirror,
    primary: Cluster,
    broker_config: Mapping[str, Any],
    incident: Incident,
    topics: dict[str, str],
    groups: list[str],
    history: RunHistory,
    progress: Callable[[str], None],
) -> RunMirror:
    """The mirror cluster (of the primary's backend, release and feature levels, one broker
    with the run's ``broker_config``: the apps moved there get what they got on the primary),
    the run's input topics created there, and MirrorMaker 2 started and mirroring; a failure
    stops what started.
    """
    backend = primary.backend
    if not primary.runs_kafka or backend is None:
        raise NotApplicable(f"a mirror needs a second cluster the harness starts: {primary.label}")
    progress("starting the mirror cluster and MirrorMaker 2")
    where = history.root / "mirror"
    cluster = make_cluster(
        backend,
        primary.version,
        1,
        dict(broker_config),
        where,
        features=primary.features,
    ).start()
    mirror = RunMirror(cluster)
    try:
        inputs = tuple(dict.fromkeys(topics[name] for name in incident.named("input")))
        for name in inputs:
            _create_like(primary, cluster, name)
        mirror.maker = MirrorMaker(
            where,
            primary.bootstrap_servers,
            cluster.bootstrap_servers,
            inputs,
            groups,
            interval_s=spec.interval_s,
            offset_lag_max=spec.offset_lag_max,
        ).start()
    except BaseException:
        mirror.release()
        raise
    history.write_meta(
        mirror={
            "bootstrap_servers": cluster.bootstrap_servers,
            "topics": list(inputs),
            "interval_s": spec.interval_s,
            "offset_lag_max": spec.offset_lag_max,
        },
    )
    return mirror


def _create_like(primary: Cluster, mirror: Cluster, topic: str) -> None:
    """``topic`` on the mirror with the primary's name and partitions, one replica."""
    partitions = len(primary.admin().list_topics(topic, timeout=30).topics[topic].partitions)
    new = NewTopic(topic, partitions, 1)
    mirror.admin().create_topics([new], operation_timeout=TOPIC_TIMEOUT_S)[topic].result(
        TOPIC_TIMEOUT_S
    )
    mirror.wait_for_leaders(topic, partitions, TOPIC_TIMEOUT_S)
