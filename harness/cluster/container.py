"""The container backend: each KRaft node in a container started with testcontainers.

Containers use host networking and bind 127.0.0.1 only, so no traffic leaves loopback and no
bridge network is needed (the daemon may run with ``--bridge=none --iptables=false``).
Every container carries its lease's label, teardown removes it, and the next start removes any
whose owner died (:mod:`kafka_replay.servers.docker`).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.servers.docker import (
    LEASE_LABEL,
    docker_container,
    docker_unavailable,
    reap_containers,
)

from . import broker_config
from .backends import register_backend
from .embedded import cluster_id, formatted_storage
from .errors import NotApplicable
from .images import local_image, resolve_image
from .nodes import AddressedNode, Node, NodeCluster

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

log = logging.getLogger(__name__)

DATA_DIR = "/var/lib/kafka/data"
#: Where a local image's entrypoint finds a formatted storage template (see storage_template).
TEMPLATE_DIR = "/opt/kafka/storage-template"


def environment_name(key: str) -> str:
    """``log.dirs`` -> ``KAFKA_LOG_DIRS``: the official image's property naming."""
    return "KAFKA_" + key.replace("-", "___").replace("_", "__").replace(".", "_").upper()


class ContainerNode(AddressedNode):
    """One node in a container; its log is saved beside the run when it stops."""

    def __init__(
        self, address: broker_config.NodeAddress, container: DockerContainer, log_path: Path
    ) -> None:
        self.address = address
        self.container = container
        self.log_path = log_path
        self._stopping = False

    @property
    def log_location(self) -> str:
        return str(self.log_path)

    def _state(self) -> dict[str, Any]:
        wrapped = self.container.get_wrapped_container()
        try:
            wrapped.reload()
        except Exception:  # removed
            return {"Running": False, "ExitCode": None}
        return wrapped.attrs["State"]

    def exit_code(self) -> int | None:
        state = self._state()
        return None if state["Running"] else state["ExitCode"]

    def alive(self) -> bool:
        return bool(self._state()["Running"])

    @property
    def paused(self) -> bool:
        return bool(self._state().get("Paused"))

    def exited_unexpectedly(self) -> bool:
        return not self._stopping and not self.alive()

    def terminate(self) -> None:
        self._stopping = True
        if self.paused:  # Docker refuses to signal a paused container
            self.resume()
        with contextlib.suppress(Exception):
            self.container.get_wrapped_container().kill(signal="SIGTERM")

    def wait_stopped(self, grace: float) -> None:
        """Wait for the stop (SIGKILL after ``grace``) and save the log; the container stays."""
        wrapped = self.container.get_wrapped_container()
        try:
            wrapped.wait(timeout=max(grace, 0.1))
        except Exception:
            log.warning("broker %d ignored SIGTERM for %.0fs; killing it", self.node_id, grace)
            self.kill()
        self.save_log()

    def release(self) -> None:
        """Remove the container (its data goes with it); the cluster's stop calls this last."""
        with contextlib.suppress(Exception):
            self.container.get_wrapped_container().remove(force=True)

    def restart(self) -> None:
        """``docker start`` the stopped container: same environment, same data on its layer."""
        self.container.get_wrapped_container().start()
        self._stopping = False

    def pause(self) -> None:
        """``docker pause``: the freezer stops every process of the node, like SIGSTOP."""
        self.container.get_wrapped_container().pause()

    def resume(self) -> None:
        """``docker unpause``."""
        with contextlib.suppress(Exception):
            self.container.get_wrapped_container().unpause()

    def kill(self) -> None:
        """``docker kill -s SIGKILL``, as a crash would (a paused container is killed too)."""
        self._stopping = True
        with contextlib.suppress(Exception):
            self.container.get_wrapped_container().kill()
        with contextlib.suppress(Exception):
            self.container.get_wrapped_container().wait(timeout=30)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.container.get_wrapped_container().logs(tail=lines).decode(errors="replace")
        except Exception:
            return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text.rstrip() or "(empty log)"

    def log_text(self) -> str:
        """The whole log, every start of this container included."""
        try:
            return self.container.get_wrapped_container().logs().decode(errors="replace")
        except Exception:
            return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def save_log(self) -> None:
        with contextlib.suppress(Exception):
            self.log_path.write_bytes(self.container.get_wrapped_container().logs())


@register_backend
class ContainerCluster(NodeCluster):
    """``brokers`` Kafka nodes in containers; same interface as the embedded cluster."""

    backend = "container"
    about = "Apache Kafka in Docker containers (testcontainers), host networking"
    options = ("image",)

    def __init__(
        self, *args: Any, image: str | None = None, heap: str = "-Xms128m -Xmx768m", **common: Any
    ) -> None:
        """``args`` and ``common`` as :class:`NodeCluster` takes them; the rest its own."""
        super().__init__(*args, **common)
        self.image = image
        self.heap = heap

    @classmethod
    def unavailable(cls, version: str) -> str | None:
        return docker_unavailable()

    def _prepare(self) -> None:
        reap_containers()  # also fails early, saying how to get Docker, when there is none
        self.image = resolve_image(self.version, self.image)
        if self.features and self.image != local_image(self.version):
            raise NotApplicable(
                f"feature levels are chosen at format, which only the harness's own image "
                f"({local_image(self.version)}) lets it do; {self.image} formats itself"
            )

    def _launch(self, addresses: list[broker_config.NodeAddress]) -> list[Node]:
        assert self.log_dir is not None and self.image is not None
        identity = cluster_id()
        nodes: list[Node] = []
        for address in addresses:
            properties = self._node_properties(address, addresses, DATA_DIR)
            labels = {LEASE_LABEL: self.lease.token, "kafka-replay.node": str(address.node_id)}
            container = docker_container(self.image).with_kwargs(network="host", labels=labels)
            for key, value in properties.items():
                container.with_env(environment_name(key), value)
            container.with_env("CLUSTER_ID", identity).with_env("KAFKA_HEAP_OPTS", self.heap)
            if self.image == local_image(self.version):
                template = formatted_storage(
                    self.version, properties, self._log_path(address), self.features
                )
                container.with_volume_mapping(str(template), TEMPLATE_DIR, "ro")
                container.with_env("KAFKA_REPLAY_DIRECTORY_ID", cluster_id())
            container.start()
            nodes.append(ContainerNode(address, container, self._log_path(address)))
        return nodes

    def log_files(self) -> list[str]:
        """Each node's log as its container has it now: a running container's log is written
        to its file only when asked (or when it stops), so a run's end reads every line."""
        for node in self.nodes:
            node.save_log()
        return super().log_files()

    def _log_path(self, address: broker_config.NodeAddress) -> Path:
        assert self.log_dir is not None
        return self.log_dir / f"broker-{address.node_id}.log"
