"""A real PostgreSQL for a run's apps to write rows to, started on loopback like a broker.

:class:`PostgresServer` makes a throw-away cluster with the machine's own ``initdb`` and runs
``postgres`` on a free 127.0.0.1 port, its process leased like a broker's so a run killed with
-9 leaves nothing running once the next run reaps. A team's own server (``--database-url``) is
:class:`~.external.ExternalDatabase`.

Root. ``initdb`` and ``postgres`` refuse to run as root, and this machine and CI run as root.
The usual way round it, the one Debian's own clusters and the official container image take,
is to run them as the ``postgres`` account (Debian's package creates it, ``./dev setup`` does
where the programs came some other way, ``$KAFKA_REPLAY_PG_USER`` names another). The harness
switches to it with ``setpriv``, which execs the program rather than starting a child, so the
leased pid is the postmaster itself; ``--pdeathsig=keep`` keeps the death signal that a
change of user clears. That account cannot enter a root-only run directory (pytest's and
``mkdtemp``'s are 0700), so as root the data directory is a private one in the system temp
directory, owned by the account and leased like the rest; the log stays in the run directory,
written through the harness's own file. Run as anyone else, the server runs as that user,
its data in the run's directory. A user namespace (``unshare --user``) would need no account,
but containers often forbid one.

Start-up on the 2-core machine with PostgreSQL 15, from :meth:`PostgresServer.start` to the
``replay`` database accepting connections: the median of 3 starts was 1.3 s with the machine
nearly idle (1.18, 1.29, 1.45 s) and 2.2 s while another test run's brokers and Spark shared
its cores. ``initdb`` is nearly all of it; ``postgres`` answers 0.07 s after it is launched.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from kafka_replay.servers.process import wait_answering
from kafka_replay.servers.reaper import reap_orphans
from kafka_replay.servers.server_log import ServerLog

from .database import PostgresError
from .local_postgres import LocalPostgres

log = logging.getLogger(__name__)

BIN_ENV = "KAFKA_REPLAY_PG_BIN"
USER_ENV = "KAFKA_REPLAY_PG_USER"
#: The account the server runs as when the harness is root (Debian's package creates it).
DEFAULT_ACCOUNT = "postgres"
PROGRAMS = ("initdb", "pg_ctl", "postgres")
DEBIAN_ROOT = Path("/usr/lib/postgresql")
INITDB_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
#: ``sun_path`` holds 108 bytes with its NUL: a longer socket path makes postgres refuse.
_SOCKET_PATH_MAX = 107
_IPC_RMID = 0


def _has_programs(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in PROGRAMS)


def _pg_config_bindir() -> Path | None:
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return None
    try:
        answer = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(answer.stdout.strip())


def _version_key(directory: Path) -> tuple[int, ...]:
    """``/usr/lib/postgresql/15/bin`` sorts by 15 (and 9.6 by (9, 6))."""
    return tuple(int(part) for part in re.findall(r"\d+", directory.parent.name))


def find_postgres_bin() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, else None.

    ``$KAFKA_REPLAY_PG_BIN`` decides alone when set; then ``pg_config --bindir``; then
    Debian's ``/usr/lib/postgresql/*/bin``, newest first (Debian keeps them off PATH).
    """
    if override := os.environ.get(BIN_ENV):
        return Path(override) if _has_programs(Path(override)) else None
    bindir = _pg_config_bindir()
    if bindir is not None and _has_programs(bindir):
        return bindir
    installed = DEBIAN_ROOT.glob("*/bin") if DEBIAN_ROOT.is_dir() else []
    for directory in sorted(installed, key=_version_key, reverse=True):
        if _has_programs(directory):
            return directory
    return None


def _server_account() -> pwd.struct_passwd | None:
    """The account to run the server as: None when the harness is not root (it runs as us)."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam(os.environ.get(USER_ENV, DEFAULT_ACCOUNT))


def postgres_unavailable() -> str | None:
    """Why a PostgreSQL server cannot start on this machine, or None when it can."""
    if find_postgres_bin() is None:
        where = os.environ.get(BIN_ENV)
        looked = f"${BIN_ENV}={where}" if where else f"pg_config --bindir or {DEBIAN_ROOT}/*/bin"
        return (
            f"no PostgreSQL server programs ({', '.join(PROGRAMS)}) in {looked}: "
            "apt-get install postgresql, or run ./dev setup"
        )
    if os.geteuid() != 0:
        return None
    name = os.environ.get(USER_ENV, DEFAULT_ACCOUNT)
    try:
        account = _server_account()
    except KeyError:
        return (
            f"as root, PostgreSQL must run as another account and there is no {name!r}: "
            f"run ./dev setup, useradd --system {name}, or set ${USER_ENV} to an account"
        )
    if account is not None and account.pw_uid == 0:
        return f"${USER_ENV}={name} is root, which PostgreSQL refuses to run as"
    if shutil.which("setpriv") is None:
        return "as root, PostgreSQL is started through setpriv (util-linux), which is missing"
    return None


def _as_account(command: list[str], account: pwd.struct_passwd | None) -> list[str]:
    """``command`` run as ``account`` through ``setpriv`` (which execs it: the pid stays)."""
    if account is None:
        return command
    switch = [
        "setpriv",
        f"--reuid={account.pw_uid}",
        f"--regid={account.pw_gid}",
        "--init-groups",
        "--pdeathsig=keep",  # a change of user clears it; spawn set it to follow the harness
        "--",
    ]
    return [*switch, *command]


class PostgresServer(LocalPostgres):
    """A PostgreSQL cluster of the run's own on 127.0.0.1, from the machine's packages; its
    postmaster is leased, so a crashed run's server is reaped like a broker; :meth:`stop`
    deletes its data."""

    ready_timeout_s = READY_TIMEOUT_S

    def __init__(self, run_dir: Path, *, die_with_owner: bool = True) -> None:
        super().__init__(run_dir)
        self.die_with_owner = die_with_owner
        self.data_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._log = ServerLog(self.log_path)
        self._bindir = Path()  # initdb's and postgres's, found by each start
        self._account: pwd.struct_passwd | None = None

    def _prepare(self) -> None:
        if self.process is not None and self.process.poll() is None:
            raise PostgresError("this server is already running")
        if (reason := postgres_unavailable()) is not None:
            raise PostgresError(reason)
        bindir = find_postgres_bin()
        assert bindir is not None
        self._bindir, self._account = bindir, _server_account()
        self._log.begin()  # initdb's output and each launch's are this start's
        reap_orphans()

    def _initialize(self) -> None:
        """``initdb``: a new cluster in a data directory of its own, trusting loopback
        connections only."""
        assert self.lease is not None
        bindir, account = self._bindir, self._account
        parent = self.run_dir if account is None else None  # root: see the module's docstring
        self.data_dir = Path(tempfile.mkdtemp(prefix="kafka-replay-pg-", dir=parent))
        self.lease.add_dir(self.data_dir)
        if account is not None:
            os.chown(self.data_dir, account.pw_uid, account.pw_gid)
        command = [
            str(bindir / "initdb"),
            f"--pgdata={self.data_dir}",
            f"--username={self.user}",
            "--encoding=UTF8",
            "--locale=C",
            "--auth=trust",
            "--no-sync",
            "--no-instructions",
        ]
        initdb = self._spawn(_as_account(command, account))
        try:
            code = initdb.wait(INITDB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            initdb.kill()
            initdb.wait()
            what = f"initdb took over {INITDB_TIMEOUT_S:.0f}s"
            raise PostgresError(self._failure(what)) from None
        if code != 0:
            raise PostgresError(self._failure(f"initdb exited with {code}"))
        (self.data_dir / "pg_hba.conf").write_text(
            "# written by kafka-replay: a test database, for this machine only\n"
            "local all all trust\n"
            "host  all all 127.0.0.1/32 trust\n"
        )

    def _launch(self, timeout: float) -> None:
        assert self.data_dir is not None
        socket_dir = str(self.data_dir)
        if len(f"{socket_dir}/.s.PGSQL.{self.port}") > _SOCKET_PATH_MAX:
            socket_dir = ""  # too deep for a Unix socket: TCP only, which is all we use
        options = self._options(socket_dir)
        command = [str(self._bindir / "postgres"), "-D", str(self.data_dir), *options]
        self.process = self._spawn(_as_account(command, self._account))
        why = wait_answering(self._accepts, self.process.poll, timeout, interval=0.05)
        if why is not None:
            raise PostgresError(self._failure(why))
        self._release_segment_on_exit()

    def _spawn(self, command: list[str]) -> subprocess.Popen[bytes]:
        assert self.lease is not None
        return self._log.spawn(
            command,
            self.lease,
            die_with_owner=self.die_with_owner,
            cwd=self.data_dir.parent if self.data_dir else None,  # one the account can enter
        )

    def _release_segment_on_exit(self) -> None:
        """Mark the postmaster's small System V segment for removal once it is detached.

        PostgreSQL removes it at shutdown, but a postmaster killed with -9 (a crashed run,
        then the reaper) would leave it in the kernel for good. Marked now, it goes with the
        last process of this server, killed or not; the running server never looks it up
        again (its children inherit the mapping), and shutdown only logs that it was gone.
        """
        assert self.data_dir is not None
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
            shmid = int(lines[6].split()[1])
        except (OSError, IndexError, ValueError):
            return
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.shmctl(shmid, _IPC_RMID, None) != 0:
            log.debug("could not mark segment %d for removal: errno %d", shmid, ctypes.get_errno())

    def log_tail(self, lines: int = 40) -> str:
        """The end of what initdb and postgres wrote since this start."""
        return self._log.tail(lines)

    def _failure(self, what: str) -> str:
        return self._log.failure(f"PostgreSQL on 127.0.0.1:{self.port} {what}")

    def _halt(self, grace: float = STOP_GRACE_S) -> None:
        """Fast shutdown (SIGINT: sessions end, no waiting for clients), then SIGKILL to the
        whole process group after ``grace`` seconds."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            log.warning("PostgreSQL ignored a fast shutdown for %.0fs; killing it", grace)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # unreaped, its group id is still ours
            process.wait()
