"""The default backend: real Apache Kafka brokers in KRaft mode, run as local JVM processes.

Each node is a combined broker and controller bound to 127.0.0.1 on free ports. Kafka's own
jars come from Maven Central through :mod:`kafka_replay.cluster.artifacts` and are cached, so a
second start works offline.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from kafka_replay.jvm_archive import class_list
from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.process import spawn, wait_frozen
from kafka_replay.servers.reaper import Lease
from kafka_replay.servers.server_log import read_tail

from . import broker_config
from .artifacts import kafka_classpath
from .backends import register_backend
from .class_archive import class_archive, exercise
from .nodes import AddressedNode, Node, NodeCluster
from .storage_template import formatted_template, install

log = logging.getLogger(__name__)

HEAP_ENV = "KAFKA_REPLAY_BROKER_HEAP"
DEFAULT_HEAP = "768m"
#: A broker here lives minutes, not months: with the C1 compiler alone it serves about 30%
#: sooner (C2's compiler threads compete for two cores while classes load); see the README.
JVM_OPTIONS = (
    "-Xms128m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)


def cluster_id() -> str:
    """A random KRaft cluster id (base64url UUID, never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class BrokerNode(AddressedNode):
    """One broker process (a KRaft JVM, or another backend's); it keeps its paths and command."""

    def __init__(self, address: broker_config.NodeAddress, data_dir: Path, log_dir: Path) -> None:
        self.address = address
        self.data_dir = data_dir
        self.config_path = data_dir.parent / f"node-{address.node_id}.properties"
        self.log_path = log_dir / f"broker-{address.node_id}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._paused = False
        #: How it was last started, so a restart runs the very same command on the same data.
        self._launch: (
            tuple[list[str], bool, Lease, Mapping[str, str] | None, Path | None] | None
        ) = None

    def write_config(self, properties: Mapping[str, str]) -> None:
        self.config_path.write_text(broker_config.render_properties(properties))

    def start(
        self,
        command: list[str],
        die_with_owner: bool,
        lease: Lease,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        """Start the process; its output is appended to the node's log, across restarts too."""
        with self.log_path.open("ab") as output:
            self.process = spawn(
                command,
                output,
                lease,  # every start is recorded, so the reaper finds a restarted node too
                env=env,
                die_with_owner=die_with_owner,
                cwd=cwd,
            )
        self._launch = (list(command), die_with_owner, lease, env, cwd)
        self._stopping = False
        self._paused = False

    def restart(self) -> None:
        """Start a stopped or killed node again: the same command, config and data."""
        if self._launch is None:
            raise RuntimeError(f"broker {self.node_id} was never started")
        if self.alive():
            raise RuntimeError(f"broker {self.node_id} is still running")
        self.start(*self._launch)

    @property
    def paused(self) -> bool:
        return self._paused and self.alive()

    def pause(self) -> None:
        """SIGSTOP: the JVM stops answering, as in a long GC pause; its sockets stay open."""
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signal.SIGSTOP)
            self._paused = True
            wait_frozen(self.process.pid)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signal.SIGCONT)
        self._paused = False

    def release(self) -> None:
        """Nothing to remove: the data directory goes with the cluster's lease."""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exited_unexpectedly(self) -> bool:
        return self.process is not None and not self._stopping and self.process.poll() is not None

    def terminate(self) -> None:
        """Ask for a clean shutdown (SIGTERM); :meth:`wait_stopped` finishes it."""
        if self.alive():
            self._stopping = True
            assert self.process is not None
            self.process.terminate()
            if self._paused:  # a stopped JVM only acts on the SIGTERM once it runs again
                self.resume()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.alive():
            self._stopping = True
            assert self.process is not None
            self.process.kill()
            self.process.wait()

    def wait_stopped(self, grace: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log.warning("broker %d ignored SIGTERM for %.0fs; killing it", self.node_id, grace)
            self.kill()

    def log_tail(self, lines: int = 40) -> str:
        return read_tail(self.log_path, lines)

    def log_text(self) -> str:
        """The whole log, every start of this node included."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def log_location(self) -> str:
        return str(self.log_path)

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()


@register_backend
class EmbeddedCluster(NodeCluster):
    """``brokers`` real Kafka nodes in local JVMs; use as a context manager or call start/stop."""

    backend = "embedded"
    about = "Apache Kafka in local JVM processes, from Maven Central"

    def __init__(
        self,
        *args: Any,
        heap: str | None = None,
        die_with_owner: bool = True,
        class_sharing: bool = True,
        jvm_options: Sequence[str] = (),
        **common: Any,
    ) -> None:
        """``args`` and ``common`` as :class:`NodeCluster` takes them; the rest its own."""
        super().__init__(*args, **common)
        self.heap = heap or os.environ.get(HEAP_ENV, DEFAULT_HEAP)
        self.die_with_owner = die_with_owner
        self.class_sharing = class_sharing
        self.jvm_options = list(jvm_options)
        self._classpath: list[Path] = []
        self._archive: Path | None = None

    @classmethod
    def fetch(cls, version: str) -> None:
        kafka_classpath(version)

    def _prepare(self) -> None:
        self._classpath = kafka_classpath(self.version)  # may take a while, once per version
        if self.class_sharing:
            self._archive = class_archive(self.version, self._jvm_command(), self._train)

    def _train(self, options: Sequence[str]) -> None:
        """One broker of this version, without an archive, through a replay's first steps."""
        with EmbeddedCluster(
            self.version,
            heap=self.heap,
            die_with_owner=self.die_with_owner,
            class_sharing=False,
            jvm_options=options,
        ) as cluster:
            exercise(cluster)

    def _launch(self, addresses: list[broker_config.NodeAddress]) -> list[Node]:
        assert self.data_dir is not None and self.log_dir is not None
        jvm = self._jvm_command()
        nodes = []
        for address in addresses:
            node_dir = self.data_dir / f"node-{address.node_id}"
            shutil.rmtree(node_dir, ignore_errors=True)
            node = BrokerNode(address, node_dir, self.log_dir)
            properties = self._node_properties(address, addresses, str(node_dir))
            node.write_config(properties)
            nodes.append(node)
        template = formatted_template(
            self.version, jvm, properties, nodes[0].log_path, self.features
        )
        identity = cluster_id()
        for node in nodes:
            install(template, node.data_dir, identity, node.node_id, directory_id=cluster_id())
        for node in nodes:
            command = [*jvm, "kafka.Kafka", str(node.config_path)]
            node.start(command, self.die_with_owner, self.lease)
        return list(nodes)

    def _jvm_command(self) -> list[str]:
        """``java`` and its options up to the main class; the archive once there is one."""
        return java_command(
            self._classpath, self.heap, self.log_dir, self._archive, self.jvm_options
        )


def java_command(
    classpath: Sequence[Path],
    heap: str = DEFAULT_HEAP,
    log_dir: Path | None = None,
    archive: Path | None = None,
    options: Sequence[str] = (),
) -> list[str]:
    """The command that runs a class of Kafka's, up to the class name."""
    log4j = resources.files("kafka_replay.cluster") / "resources" / "log4j2.properties"
    return [
        find_java(),
        *([f"-XX:SharedArchiveFile={archive}"] if archive else []),
        *JVM_OPTIONS,
        f"-Xmx{heap}",
        *options,
        f"-Dlog4j2.configurationFile={log4j}",
        *([f"-Dkafka.logs.dir={log_dir}"] if log_dir else []),
        "-cp",
        os.pathsep.join(str(jar) for jar in classpath),
    ]


def broker_class_list(version: str) -> Path | None:
    """The classes a broker of ``version`` loads (made with the class-data archive), if any."""
    cluster = EmbeddedCluster(version)
    cluster._prepare()
    return class_list(cluster._archive) if cluster._archive else None


def formatted_storage(
    version: str,
    properties: Mapping[str, str],
    log_path: Path,
    features: Mapping[str, int] | None = None,
) -> Path:
    """A formatted storage template for a node config, made by this machine's Java."""
    jvm = java_command(kafka_classpath(version))
    return formatted_template(version, jvm, properties, log_path, features)
