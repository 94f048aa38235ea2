"""The run's PostgreSQL in a container, for the container backend: started like its brokers.

:class:`ContainerPostgres` runs ``kafka-replay/postgres:bookworm`` (built here, from Debian's
packages and no registry: :mod:`.postgres_image`) through testcontainers, with host networking
and ``postgres`` listening on a free 127.0.0.1 port, as the Kafka containers do (the daemon may
run with ``--bridge=none --iptables=false``). The container makes a throw-away cluster when it
starts, trusting 127.0.0.1 only; its settings, superuser, database, URLs and start are those
of :class:`~.postgres.PostgresServer` (:mod:`.local_postgres`), so the apps see no difference.

The container carries its lease's label, as a broker's does: :meth:`ContainerPostgres.stop`
removes it, and after a crash the next start of a container (a database or a broker) does.
Its log is saved as ``postgres.log`` in the run's directory when it stops.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.servers.docker import (
    LEASE_LABEL,
    Progress,
    docker_container,
    docker_unavailable,
    reap_containers,
)
from kafka_replay.servers.process import wait_answering
from kafka_replay.servers.reaper import reap_orphans
from kafka_replay.servers.server_errors import DockerUnavailable, ServerError

from .database import PostgresError
from .local_postgres import LocalPostgres
from .postgres_image import POSTGRES_IMAGE, build_postgres_image

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

log = logging.getLogger(__name__)

#: From ``docker run`` to the ``replay`` database: initdb in the container is most of it.
READY_TIMEOUT_S = 60.0
#: Which label says what a kafka-replay container runs (a broker's says its node).
ROLE_LABEL = "kafka-replay.role"


class ContainerPostgres(LocalPostgres):
    """A PostgreSQL cluster of the run's own, in a container on 127.0.0.1; its container is
    leased, so a crashed run's is reaped like a broker's; :meth:`stop` removes it, its data
    with it."""

    ready_timeout_s = READY_TIMEOUT_S

    def __init__(self, run_dir: Path, progress: Progress = log.warning) -> None:
        super().__init__(run_dir)
        self.progress = progress  # says when the image is built (minutes, once per machine)
        self.name = ""  # the container's, once started
        self.container: DockerContainer | None = None
        self._image = POSTGRES_IMAGE  # the tag each start builds, if need be

    @staticmethod
    def unavailable() -> str | None:
        """Why no container can start here (no Docker daemon answers), or None."""
        return docker_unavailable()

    def _prepare(self) -> None:
        """Reap what crashed runs left, and build the image once; :class:`PostgresError`
        saying what to do when Docker does not answer or the image cannot be built."""
        if self.container is not None:
            raise PostgresError("this database's container is already running")
        try:
            reap_orphans()
            reap_containers()
            self._image = build_postgres_image(self.progress)
        except DockerUnavailable as exc:
            raise PostgresError(
                f"the container backend runs the run's PostgreSQL in a container, and {exc} "
                "Or give the run a database of your own with --database-url."
            ) from None
        except ServerError as exc:
            raise PostgresError(
                f"cannot build {POSTGRES_IMAGE}, the image the run's PostgreSQL runs in: {exc}\n"
                "Or give the run a database of your own with --database-url, or use the "
                "embedded backend (PostgreSQL from the machine's own packages)."
            ) from None

    def _launch(self, timeout: float) -> None:
        assert self.lease is not None
        labels = {LEASE_LABEL: self.lease.token, ROLE_LABEL: "postgres"}
        self.name = f"kafka-replay-postgres-{self.lease.token}"
        container = (
            docker_container(self._image)
            .with_kwargs(network="host", labels=labels)
            .with_name(self.name)
            .with_env("POSTGRES_USER", self.user)
            .with_command(self._options(socket_dir="/tmp"))
        )
        self.container = container
        try:
            container.start()
        except Exception as exc:  # the daemon's APIError, whatever its kind
            raise PostgresError(f"cannot start a container of {self._image}: {exc}") from None
        if (why := wait_answering(self._accepts, self._exit_code, timeout)) is not None:
            raise PostgresError(self._failure(why))

    def _wrapped(self) -> Any:
        assert self.container is not None
        return self.container.get_wrapped_container()

    def _exit_code(self) -> int | None:
        """None while the container runs, else its exit code."""
        wrapped = self._wrapped()
        try:
            wrapped.reload()
        except Exception:  # removed: no code to say
            raise PostgresError(self._failure("was removed before it answered")) from None
        state = wrapped.attrs["State"]
        return None if state.get("Running") else state.get("ExitCode")

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self._wrapped().logs(tail=lines).decode(errors="replace")
        except Exception:
            return "(no log: the container is gone)"
        return text.rstrip() or "(empty log)"

    def _failure(self, what: str) -> str:
        return (
            f"PostgreSQL in container {self.name} on 127.0.0.1:{self.port} {what}; the end of its "
            f"log:\n{self.log_tail()}"
        )

    def _halt(self) -> None:
        """Save the container's log beside the run's (appended), then remove the container;
        its data goes with it."""
        if self.container is None:
            return
        with contextlib.suppress(Exception):
            output = self._wrapped().logs()
            with self.log_path.open("ab") as log_file:
                log_file.write(f"$ docker run --name {self.name} {self._image}\n".encode())
                log_file.write(output)
        with contextlib.suppress(Exception):
            self._wrapped().remove(force=True)
        self.container = None
