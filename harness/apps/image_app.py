"""An app shipped as a container image, run so the supervisor's verbs mean what they mean for a
process.

A container's processes are children of the Docker daemon, not of the ``docker run`` client, so
signalling a client's process group neither crashes nor freezes the service. Here each instance
is a container of its own (testcontainers creates it; host networking, so the brokers stay on
127.0.0.1), and :class:`ContainerProcess` answers the part of :class:`subprocess.Popen` the
supervisor uses: a crash is ``docker kill -s KILL``, a freeze ``docker pause``, a stop SIGTERM
then SIGKILL after the grace (``docker stop``), and a restart a new container of the image. The
container's output is followed into the instance's log; its exit is seen once that output is
written and the container removed. Every container carries its lease's label, so one that a
killed harness left is removed by the next run.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_replay.servers.docker import (
    LEASE_LABEL,
    DockerUnavailable,
    docker_client,
    docker_container,
    image_exists,
    pull_image,
    reap_containers,
)
from kafka_replay.servers.reaper import Lease
from kafka_replay.servers.server_errors import ServerError

#: Which label says what a kafka-replay container runs (an app's says ``app``).
ROLE_LABEL = "kafka-replay.role"
INSTANCE_LABEL = "kafka-replay.instance"
#: How long an exited container's last output may take to reach the log.
OUTPUT_FLUSH_S = 5.0


class AppImageError(ValueError):
    """The app's image cannot run here: no Docker daemon answers, or the image is missing."""


def check_app_image(image: str) -> None:
    """Refuse an image that is neither on this machine nor pullable, before any broker starts;
    the image is never pulled when it is present. Removes containers a killed run left."""
    try:
        client = docker_client()
    except DockerUnavailable as exc:
        reason = str(exc.__cause__ or exc).splitlines()[0]
        raise AppImageError(
            f"the app image {image} needs a Docker daemon and none answers ({reason}): start "
            "one (on Debian: apt-get install docker.io && dockerd --bridge=none --iptables=false &)"
        ) from None
    reap_containers()
    if image_exists(client, image):
        return
    try:
        pull_image(client, image)
    except ServerError as exc:
        raise AppImageError(
            f"the app image {image} is not on this machine and could not be pulled "
            f"({str(exc).splitlines()[0]}): build or load it first (docker build -t {image} .)"
        ) from None


def exit_code(status: int) -> int:
    """Docker's ``128 + N`` for a container ended by signal N, as :mod:`subprocess` says it
    (``-N``), so a killed container's exit reads as a killed process's."""
    if 128 < status < 160:
        with contextlib.suppress(ValueError):
            return -signal.Signals(status - 128).value
    return status


class ContainerProcess:
    """One container of an app's image, as the supervisor sees a process."""

    def __init__(
        self,
        image: str,
        arguments: Sequence[str],
        env: Mapping[str, str],
        output: Path,
        lease: Lease,
        mounts: Sequence[Path] = (),
        instance: int = 0,
    ) -> None:
        """Start the container: ``arguments`` are its command (none: the image's own), ``env``
        its whole environment, each of ``mounts`` bound at the same path (the report file's
        and client properties' directories); its output is appended to ``output``."""
        container = docker_container(image).with_kwargs(
            network="host",
            labels={
                LEASE_LABEL: lease.token,
                ROLE_LABEL: "app",
                "kafka-replay.instance": str(instance),
            },
        )
        if arguments:
            container.with_command(list(arguments))
        for name, value in env.items():
            container.with_env(name, value)
        for path in mounts:
            container.with_volume_mapping(str(path), str(path), "rw")
        try:
            container.start()
        except Exception as exc:
            with contextlib.suppress(Exception):
                container.stop()
            raise OSError(f"docker could not start {image}: {str(exc).splitlines()[0]}") from exc
        self._container: Any = container.get_wrapped_container()
        lease.add_container(self._container.id)
        self._container.reload()
        #: the container's first process on this host (its id's digits if it is gone already)
        self.pid: int = int(self._container.attrs["State"]["Pid"]) or int(
            self._container.id[:8], 16
        )
        self.returncode: int | None = None
        self._exited = threading.Event()
        self._follower = threading.Thread(
            target=self._follow, args=(output,), name=f"app-image-log-{instance}", daemon=True
        )
        self._follower.start()
        threading.Thread(target=self._await_exit, name=f"app-image-{instance}", daemon=True).start()

    @property
    def container_id(self) -> str:
        return str(self._container.id)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"container {self._container.short_id}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: signal.Signals) -> None:
        """SIGSTOP pauses the container, SIGCONT resumes it; any other signal is delivered to
        its processes (a paused container is resumed first, as Docker refuses to signal it,
        except SIGKILL, which ends it paused or not)."""
        with contextlib.suppress(Exception):  # it ended meanwhile: the exit says so
            if sig == signal.SIGSTOP:
                self._container.pause()
            elif sig == signal.SIGCONT:
                self._container.unpause()
            else:
                if sig != signal.SIGKILL and self._paused():
                    self._container.unpause()
                self._container.kill(signal=sig.name)

    def _paused(self) -> bool:
        self._container.reload()
        return bool(self._container.attrs["State"].get("Paused"))

    def _follow(self, output: Path) -> None:
        with output.open("ab") as log, contextlib.suppress(Exception):
            for chunk in self._container.logs(stream=True, follow=True):
                log.write(chunk)
                log.flush()

    def _await_exit(self) -> None:
        """Once the container ends: its output written, the container removed, then the exit
        code, so an exit seen is an exit cleaned up."""
        try:
            status = int(self._container.wait().get("StatusCode", -1))
        except Exception:  # removed under us (the reaper of a run that found it orphaned)
            status = 128 + signal.SIGKILL.value
        self._follower.join(OUTPUT_FLUSH_S)
        with contextlib.suppress(Exception):
            self._container.remove(force=True)
        self.returncode = exit_code(status)
        self._exited.set()
