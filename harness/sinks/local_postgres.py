"""What the run's own PostgreSQL does the same way wherever it runs: from the machine's
packages (:class:`~.postgres.PostgresServer`) or in a container
(:class:`~.container_postgres.ContainerPostgres`).

Both give the apps the same superuser, database and URLs on 127.0.0.1, run with the same
settings, start again on a fresh port when another process took theirs between our choosing it
and the server binding it, and leave nothing running when a start fails or is interrupted.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from pathlib import Path
from typing import ClassVar, Self

import psycopg
from psycopg import sql

from kafka_replay.servers.ports import free_ports
from kafka_replay.servers.reaper import Lease

from .database import Database, PostgresError

SUPERUSER = "replay"
DATABASE = "replay"
#: A test database: nothing in it must survive a crash, so nothing waits for the disk; and the
#: machine has 2 cores and runs Kafka and Spark beside it, so its memory is kept small.
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "16MB",
    "max_connections": "50",
}
#: What a failed bind says in the log: the port was taken meanwhile, so start again.
_PORT_TAKEN = re.compile(r"Address already in use")
#: Launches on fresh ports before a start gives up.
LAUNCH_ATTEMPTS = 3


class LocalPostgres(Database):
    """A PostgreSQL server of the run's own on 127.0.0.1, leased so a crashed run's is reaped;
    a context manager, or :meth:`start` and :meth:`stop`. Subclasses say how it is launched
    and halted."""

    schema = "public"
    #: The default for :meth:`start`: from launch to the server accepting connections.
    ready_timeout_s: ClassVar[float]

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.log_path = self.run_dir / "postgres.log"
        self.database = DATABASE
        self.user = SUPERUSER
        self.port = 0
        self.lease: Lease | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}?user={self.user}"

    def _admin_url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def start(self, timeout: float | None = None) -> Self:
        """Launch the server until it accepts connections (a fresh port if ours was taken),
        then make the :attr:`database` the apps get; a failure, or a Ctrl-C, leaves nothing."""
        self._prepare()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.lease = Lease.take()
        try:
            self._initialize()
            for attempt in range(LAUNCH_ATTEMPTS):
                self.port = free_ports(1)[0]
                try:
                    self._launch(self.ready_timeout_s if timeout is None else timeout)
                    break
                except PostgresError as exc:  # its message ends with the server's log
                    self._halt()
                    if attempt == LAUNCH_ATTEMPTS - 1 or not _PORT_TAKEN.search(str(exc)):
                        raise
            with self._connect(self._admin_url()) as connection:
                connection.execute(
                    sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database))
                )
        except BaseException:  # a Ctrl-C while it starts too: nothing is left
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Halt the server and release its lease, which deletes its data; safe to call twice."""
        self._halt()
        if self.lease is not None:
            self.lease.release()
            self.lease = None

    @abstractmethod
    def _prepare(self) -> None:
        """Before anything is leased: :class:`PostgresError` if it is running or cannot start
        here, saying what to do; reap what crashed runs left."""

    def _initialize(self) -> None:
        """Once leased, before the first launch: what all launches share (none by default)."""

    @abstractmethod
    def _launch(self, timeout: float) -> None:
        """Start the server on :attr:`port` and wait until :meth:`_accepts`, else raise
        :class:`PostgresError` ending with its log."""

    @abstractmethod
    def _halt(self) -> None:
        """Stop what :meth:`_launch` started, if it runs; safe to call twice."""

    @property
    def _cluster_name(self) -> str:
        """Marks the server as ours: a server of another run (trusting 127.0.0.1 too) that
        took our port meanwhile must not pass for it."""
        assert self.lease is not None
        return f"kafka-replay-{self.lease.token}"

    def _options(self, socket_dir: str) -> list[str]:
        """``postgres``'s ``-c`` options: :data:`SETTINGS`, the port and the cluster name."""
        settings = {
            **SETTINGS,
            "port": self.port,
            "unix_socket_directories": socket_dir,
            "cluster_name": self._cluster_name,
        }
        return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]

    def _accepts(self) -> bool:
        """Our server answers on :attr:`port` (not another that took it meanwhile)."""
        try:
            with psycopg.connect(self._admin_url(), connect_timeout=2) as connection:
                name = connection.execute("SHOW cluster_name").fetchone()
        except psycopg.Error:
            return False
        return name == (self._cluster_name,)
