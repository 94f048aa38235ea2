"""MirrorMaker 2 between two clusters: one Connect worker on the target cluster running
MirrorSourceConnector (records, and offset syncs) and MirrorCheckpointConnector (each group's
offsets translated onto the target), as a team runs it for disaster recovery.

Topics keep their names on the target (``IdentityReplicationPolicy``: the service moved there
reads the topic it read before), records are copied as bytes with their headers, and the
checkpoint, offset-sync and refresh intervals are compressed from 60, 60 and 600 s to
``interval_s``. The worker is a leased server like a broker: reaped if its owner dies.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_replay.servers.maven import Artifact
from kafka_replay.servers.ports import free_ports, listening_addresses
from kafka_replay.servers.process import stop_process, wait_answering
from kafka_replay.servers.reaper import Lease, reap_orphans
from kafka_replay.servers.server_log import ServerLog

from . import connect_runtime

#: ``connect-mirror`` is published up to 4.3.1 on Maven Central; the worker runs the same release.
MIRROR_VERSION = "4.3.1"
#: The two clusters' aliases, as MirrorMaker 2's settings and internal topics name them.
SOURCE, TARGET = "primary", "mirror"
#: How long the worker gets to answer and its connectors to run.
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
_CONNECTORS = "org.apache.kafka.connect.mirror."


def mirror_classpath(version: str = MIRROR_VERSION) -> list[Path]:
    """Connect's worker with ``connect-mirror`` on its classpath, resolved on first use."""
    mirror = Artifact("org.apache.kafka", "connect-mirror", version)
    return connect_runtime.connect_classpath(version, mirror, name=f"mirror-maker-{version}")


def mirror_connectors(
    source: str,
    target: str,
    topics: Sequence[str],
    groups: Sequence[str],
    interval_s: float,
    offset_lag_max: int,
) -> dict[str, dict[str, Any]]:
    """The two connectors' configs, by name: what MirrorMaker 2 is told in Connect's own form."""
    seconds = str(max(1, round(interval_s)))
    common = {
        "source.cluster.alias": SOURCE,
        "target.cluster.alias": TARGET,
        "source.cluster.bootstrap.servers": source,
        "target.cluster.bootstrap.servers": target,
        "replication.policy.class": _CONNECTORS + "IdentityReplicationPolicy",
        "offset-syncs.topic.location": "target",
        "offset-syncs.topic.replication.factor": "1",
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        "tasks.max": "1",
    }
    return {
        "mirror-source": {
            **common,
            "connector.class": _CONNECTORS + "MirrorSourceConnector",
            "topics": ",".join(topics),
            "replication.factor": "1",
            "offset.lag.max": str(offset_lag_max),
            "refresh.topics.interval.seconds": seconds,
            "sync.topic.acls.enabled": "false",
        },
        "mirror-checkpoint": {
            **common,
            "connector.class": _CONNECTORS + "MirrorCheckpointConnector",
            "groups": ",".join(groups),
            "checkpoints.topic.replication.factor": "1",
            "emit.checkpoints.interval.seconds": seconds,
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": seconds,
            "refresh.groups.interval.seconds": seconds,
        },
    }


class MirrorMaker:
    """One MirrorMaker 2 worker from ``source`` to ``target``; :meth:`start`, :meth:`stop`."""

    def __init__(
        self,
        work_dir: Path,
        source: str,
        target: str,
        topics: Sequence[str],
        groups: Sequence[str],
        *,
        interval_s: float = 2.0,
        offset_lag_max: int = 100,
        version: str = MIRROR_VERSION,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.target = target
        self.connectors = mirror_connectors(
            source, target, topics, groups, interval_s, offset_lag_max
        )
        self.version = version
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.lease: Lease | None = None
        self._log = ServerLog(self.work_dir / "mirror-maker.log")

    def start(self, timeout: float = START_TIMEOUT_S) -> MirrorMaker:
        """Launch the worker, submit both connectors and wait until their tasks run."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        command = connect_runtime.worker_command(classpath=mirror_classpath(self.version))
        reap_orphans()
        self.lease = Lease.take()
        try:
            self._launch(command, timeout)
        except BaseException:  # a Ctrl-C while it starts too: no JVM is left
            self.stop()
            raise
        return self

    def _launch(self, worker: list[str], timeout: float) -> None:
        (self.port,) = free_ports(1)
        settings = connect_runtime.worker_properties(
            bootstrap=self.target,
            group=f"mirror-maker-{self.port}",
            rest_port=self.port,
            plugins=[],
            client={},
            settings={
                "plugin.discovery": "service_load",
                "key.converter": BYTES,
                "value.converter": BYTES,
            },
        )
        del settings["plugin.path"]  # connect-mirror is on the classpath
        properties = connect_runtime.write_properties(
            self.work_dir / "mirror-maker.properties", settings
        )
        assert self.lease is not None
        self._log.begin()
        self.process = process = self._log.spawn([*worker, str(properties)], self.lease)
        why = wait_answering(lambda: connect_runtime.rest_answers(self.port), process.poll, timeout)
        if why is not None:
            raise connect_runtime.ConnectError(self._log.failure(f"MirrorMaker 2's worker {why}"))
        for name, config in self.connectors.items():
            connect_runtime.put_connector(self.port, name, config, timeout)
        for name in self.connectors:  # checkpoints have tasks only once a group is known
            tasks = name == "mirror-source"
            why = wait_answering(
                lambda name=name, tasks=tasks: connect_runtime.connector_running(
                    self.port, name, tasks
                ),
                process.poll,
                timeout,
                interval=0.2,
            )
            if why is not None:
                state = connect_runtime.connector_state(self.port, name)
                raise connect_runtime.ConnectError(
                    self._log.failure(f"MirrorMaker 2's {name} {why} running ({state})")
                )
        listening = listening_addresses(process.pid)
        if {address for address, _ in listening} != {"127.0.0.1"}:  # the network rule, kept
            raise connect_runtime.ConnectError(
                f"MirrorMaker 2's worker listens beyond 127.0.0.1: {sorted(listening)}"
            )

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; safe to call twice."""
        stop_process(self.process, grace)
        if self.lease is not None:
            self.lease.release()
            self.lease = None
