"""The run's PostgreSQL in a container, for the container backend: started like its brokers.

:class:`ContainerPostgres` runs ``kafka-replay/postgres:bookworm`` (built here, from Debian's
packages and no registry: :mod:`.postgres_image`) through testcontainers, with host networking
and ``postgres`` listening on a free 127.0.0.1 port, as the Kafka containers do (the daemon may
run with ``--bridge=none --iptables=false``). The container makes a throw-away cluster when it
starts, trusting 127.0.0.1 only, fsync off, with the embedded server's settings, superuser and
database, so the apps get the same URLs as from :class:`~.postgres.PostgresServer`.

The container carries its lease's label, as a broker's does: :meth:`ContainerPostgres.stop`
removes it, and after a crash the next start of a container (a database or a broker) does.
Its log is saved as ``postgres.log`` in the run's directory when it stops.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import psycopg
from psycopg import sql

from kafka_replay.cluster.container import LEASE_LABEL, docker_container, reap_containers
from kafka_replay.cluster.errors import ClusterError
from kafka_replay.cluster.images import DockerUnavailable, Progress, docker_client
from kafka_replay.cluster.ports import free_ports
from kafka_replay.cluster.reaper import Lease, reap_orphans

from .database import Database, PostgresError
from .postgres import DATABASE, SETTINGS, SUPERUSER
from .postgres_image import POSTGRES_IMAGE, build_postgres_image

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

log = logging.getLogger(__name__)

#: From ``docker run`` to the ``replay`` database: initdb in the container is most of it.
READY_TIMEOUT_S = 60.0
#: Which label says what a kafka-replay container runs (a broker's says its node).
ROLE_LABEL = "kafka-replay.role"
#: What a failed bind says in the log: the port was taken meanwhile, so start again.
_PORT_TAKEN = re.compile(r"Address already in use")


class ContainerPostgres(Database):
    """A PostgreSQL cluster of the run's own, in a container on 127.0.0.1; a context manager,
    or :meth:`start` and :meth:`stop`. Its container is leased, so a crashed run's is reaped
    like a broker's; :meth:`stop` removes it, its data with it."""

    schema = "public"

    def __init__(self, run_dir: Path, progress: Progress = log.warning) -> None:
        self.run_dir = Path(run_dir)
        self.log_path = self.run_dir / "postgres.log"
        self.progress = progress  # says when the image is built (minutes, once per machine)
        self.database = DATABASE
        self.user = SUPERUSER
        self.port = 0
        self.name = ""  # the container's, once started
        self.container: DockerContainer | None = None
        self.lease: Lease | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}?user={self.user}"

    @staticmethod
    def unavailable() -> str | None:
        """Why no container can start here (no Docker daemon answers), or None."""
        try:
            docker_client()
        except DockerUnavailable as exc:
            return str(exc)
        return None

    def start(self, timeout: float = READY_TIMEOUT_S) -> Self:
        """Build the image if needed, then a container until its server accepts connections
        (a fresh port if ours was taken), then the :attr:`database` the apps get."""
        if self.container is not None:
            raise PostgresError("this database's container is already running")
        image = self._image()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.lease = Lease.take()
        try:
            for attempt in range(3):
                try:
                    self._launch(image, timeout)
                    break
                except PostgresError as exc:
                    taken = _PORT_TAKEN.search(str(exc))
                    self._remove()
                    if attempt == 2 or not taken:
                        raise
            with self._connect(self._admin_url()) as connection:
                connection.execute(
                    sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database))
                )
        except BaseException:  # a Ctrl-C while it starts too: no container is left
            self.stop()
            raise
        return self

    def _image(self) -> str:
        """Reap what crashed runs left, and the image, built once; :class:`PostgresError`
        saying what to do when Docker does not answer or the image cannot be built."""
        try:
            reap_orphans()
            reap_containers()
            return build_postgres_image(self.progress)
        except DockerUnavailable as exc:
            raise PostgresError(
                f"the container backend runs the run's PostgreSQL in a container, and {exc} "
                "Or give the run a database of your own with --database-url."
            ) from None
        except ClusterError as exc:
            raise PostgresError(
                f"cannot build {POSTGRES_IMAGE}, the image the run's PostgreSQL runs in: {exc}\n"
                "Or give the run a database of your own with --database-url, or use the "
                "embedded backend (PostgreSQL from the machine's own packages)."
            ) from None

    def _launch(self, image: str, timeout: float) -> None:
        assert self.lease is not None
        self.port = free_ports(1)[0]
        # cluster_name marks the server as ours: a port taken meanwhile by another server
        # (another run's, trusting 127.0.0.1 too) must not pass for it
        settings = {
            **SETTINGS,
            "port": self.port,
            "unix_socket_directories": "/tmp",
            "cluster_name": f"kafka-replay-{self.lease.token}",
        }
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        labels = {LEASE_LABEL: self.lease.token, ROLE_LABEL: "postgres"}
        self.name = f"kafka-replay-postgres-{self.lease.token}"
        container = (
            docker_container(image)
            .with_kwargs(network="host", labels=labels)
            .with_name(self.name)
            .with_env("POSTGRES_USER", self.user)
            .with_command(options)
        )
        self.container = container
        try:
            container.start()
        except Exception as exc:  # the daemon's APIError, whatever its kind
            raise PostgresError(f"cannot start a container of {image}: {exc}") from None
        deadline = time.monotonic() + timeout
        while not self._accepts():
            state = self._state()
            if not state.get("Running"):
                code = state.get("ExitCode")
                raise PostgresError(self._failure(f"exited with {code} before it answered"))
            if time.monotonic() > deadline:
                raise PostgresError(self._failure(f"did not answer within {timeout:.0f}s"))
            time.sleep(0.1)

    def _admin_url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def _accepts(self) -> bool:
        """Our server answers on the port (not another that took it meanwhile)."""
        assert self.lease is not None
        try:
            with psycopg.connect(self._admin_url(), connect_timeout=2) as connection:
                name = connection.execute("SHOW cluster_name").fetchone()
        except psycopg.Error:
            return False
        return name == (f"kafka-replay-{self.lease.token}",)

    def _wrapped(self) -> Any:
        assert self.container is not None
        return self.container.get_wrapped_container()

    def _state(self) -> dict[str, Any]:
        wrapped = self._wrapped()
        try:
            wrapped.reload()
        except Exception:  # removed
            return {"Running": False, "ExitCode": None}
        return wrapped.attrs["State"]

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

    def _remove(self) -> None:
        """Save the container's log beside the run's (appended), then remove the container."""
        if self.container is None:
            return
        with contextlib.suppress(Exception):
            output = self._wrapped().logs()
            with self.log_path.open("ab") as log_file:
                log_file.write(f"$ docker run --name {self.name} {POSTGRES_IMAGE}\n".encode())
                log_file.write(output)
        with contextlib.suppress(Exception):
            self._wrapped().remove(force=True)
        self.container = None

    def stop(self) -> None:
        """Remove the container (its data goes with it) and the lease; safe to call twice."""
        self._remove()
        if self.lease is not None:
            self.lease.release()
            self.lease = None
