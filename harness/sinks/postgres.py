"""A real PostgreSQL for a run's apps to write rows to, started on loopback like a broker.

:class:`PostgresServer` makes a throw-away cluster with the machine's own ``initdb`` and runs
``postgres`` on a free 127.0.0.1 port, its process leased like a broker's so a run killed with
-9 leaves nothing running once the next run reaps. :class:`ExternalDatabase` is a team's own
server (``--database-url``): the run gets a schema of its own there and drops only that.

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
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from kafka_replay.cluster.ports import free_ports
from kafka_replay.cluster.process import spawn
from kafka_replay.cluster.reaper import Lease, reap_orphans

log = logging.getLogger(__name__)

BIN_ENV = "KAFKA_REPLAY_PG_BIN"
USER_ENV = "KAFKA_REPLAY_PG_USER"
#: The account the server runs as when the harness is root (Debian's package creates it).
DEFAULT_ACCOUNT = "postgres"
PROGRAMS = ("initdb", "pg_ctl", "postgres")
DEBIAN_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "replay"
DATABASE = "replay"
JDBC_DRIVER = "org.postgresql:postgresql:42.7.14"
INITDB_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
#: How long a connection may take before the database counts as not answering.
CONNECT_TIMEOUT_S = 5
#: ``sun_path`` holds 108 bytes with its NUL: a longer socket path makes postgres refuse.
_SOCKET_PATH_MAX = 107
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
_IPC_RMID = 0


class PostgresError(RuntimeError):
    """A database could not be started, reached or cleaned up; the message says why."""


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


def redact(url: str) -> str:
    """``url`` with its password, in the user part or the query, shown as ``***``."""
    parts = urlsplit(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    pairs = [
        "password=***" if pair.split("=", 1)[0] == "password" else pair
        for pair in parts.query.split("&")
        if pair
    ]
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{hosts}", query="&".join(pairs)))


def _query_pairs(query: str) -> list[tuple[str, str]]:
    """A URI's query as libpq reads it: percent-decoded, ``+`` left as it is."""
    pairs = []
    for pair in query.split("&"):
        if pair:
            key, _, value = pair.partition("=")
            pairs.append((unquote(key), unquote(value)))
    return pairs


def _encode(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{quote(key, safe='')}={quote(value, safe='')}" for key, value in pairs)


def postgres_jdbc_jar() -> Path:
    """PostgreSQL's JDBC driver (:data:`JDBC_DRIVER`) from Maven Central, cached."""
    from kafka_replay.checker.spark import maven_jars  # pulls in pyspark: only when asked

    jars = maven_jars([JDBC_DRIVER])
    artifact = JDBC_DRIVER.split(":")[1]
    return next(jar for jar in jars if jar.name.startswith(f"{artifact}-"))


class Database(ABC):
    """A database a run's apps write rows to: a URL for libpq and one for JDBC, both landing
    unqualified tables in :attr:`schema`, and the DDL and queries the harness itself runs."""

    schema: str

    @property
    @abstractmethod
    def url(self) -> str:
        """A libpq URI (psycopg, most drivers)."""

    @property
    @abstractmethod
    def jdbc_url(self) -> str:
        """The same database for PostgreSQL's JDBC driver (Spark, JVM apps)."""

    @abstractmethod
    def start(self) -> Self: ...

    @abstractmethod
    def stop(self) -> None:
        """Remove what :meth:`start` made; safe to call twice."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def execute(self, statements: str) -> None:
        """Run ``statements`` (DDL an incident declares, say) in :attr:`schema`."""
        self._run(statements, fetch=False)

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        """The rows ``statement`` returns, unqualified names read from :attr:`schema`."""
        return self._run(statement, fetch=True)

    def _run(self, statement: str, fetch: bool) -> list[tuple[Any, ...]]:
        connection = self._connect(self.url)
        try:
            with connection:
                cursor = connection.execute(statement)  # type: ignore[arg-type]
                return cursor.fetchall() if fetch else []
        except psycopg.Error as exc:
            raise PostgresError(f"{statement!r} failed in schema {self.schema}: {exc}") from exc

    @staticmethod
    def _connect(url: str, autocommit: bool = True) -> psycopg.Connection[Any]:
        """A connection, or :class:`PostgresError` naming the URL (its password hidden)."""
        try:
            return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            message = str(exc)
            if password := urlsplit(url).password:
                message = message.replace(password, "***").replace(unquote(password), "***")
            raise PostgresError(f"the database at {redact(url)} did not answer: {message}") from exc


class PostgresServer(Database):
    """A PostgreSQL cluster of the run's own on 127.0.0.1; a context manager, or :meth:`start`
    and :meth:`stop`. Its postmaster is leased, so a crashed run's server is reaped like a
    broker; :meth:`stop` deletes its data."""

    schema = "public"

    def __init__(self, run_dir: Path, *, die_with_owner: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.log_path = self.run_dir / "postgres.log"
        self.die_with_owner = die_with_owner
        self.database = DATABASE
        self.user = SUPERUSER
        self.port = 0
        self.data_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.lease: Lease | None = None
        self._log_offset = 0  # where this start's output begins in the log

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}?user={self.user}"

    def start(self, timeout: float = READY_TIMEOUT_S) -> Self:
        """``initdb``, then ``postgres`` until it accepts connections; a fresh port if ours
        was taken; then the :attr:`database` the apps get."""
        if self.process is not None and self.process.poll() is None:
            raise PostgresError("this server is already running")
        if (reason := postgres_unavailable()) is not None:
            raise PostgresError(reason)
        bindir = find_postgres_bin()
        assert bindir is not None
        account = _server_account()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        reap_orphans()
        self.lease = Lease.take()
        try:
            self._init_cluster(bindir, account)
            for attempt in range(3):
                try:
                    self._launch(bindir, account, timeout)
                    break
                except PostgresError:
                    self._stop_process()
                    if attempt == 2 or not _PORT_TAKEN.search(self._output()):
                        raise
            with self._connect(self._admin_url()) as connection:
                connection.execute(
                    sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database))
                )
        except BaseException:  # a Ctrl-C while it starts too: no server is left
            self.stop()
            raise
        return self

    def _init_cluster(self, bindir: Path, account: pwd.struct_passwd | None) -> None:
        """A new cluster in a data directory of its own, trusting loopback connections only."""
        assert self.lease is not None
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

    def _launch(self, bindir: Path, account: pwd.struct_passwd | None, timeout: float) -> None:
        assert self.data_dir is not None
        self.port = free_ports(1)[0]
        socket_dir = str(self.data_dir)
        if len(f"{socket_dir}/.s.PGSQL.{self.port}") > _SOCKET_PATH_MAX:
            socket_dir = ""  # too deep for a Unix socket: TCP only, which is all we use
        settings = {**SETTINGS, "port": self.port, "unix_socket_directories": socket_dir}
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        command = [str(bindir / "postgres"), "-D", str(self.data_dir), *options]
        self.process = self._spawn(_as_account(command, account))
        deadline = time.monotonic() + timeout
        while not self._accepts():
            if (code := self.process.poll()) is not None:
                raise PostgresError(self._failure(f"exited with {code} before it answered"))
            if time.monotonic() > deadline:
                raise PostgresError(self._failure(f"did not answer within {timeout:.0f}s"))
            time.sleep(0.05)
        self._release_segment_on_exit()

    def _spawn(self, command: list[str]) -> subprocess.Popen[bytes]:
        assert self.lease is not None
        with self.log_path.open("ab") as output:
            output.write(f"$ {' '.join(command)}\n".encode())
            output.flush()
            return spawn(
                command,
                output,
                self.lease,
                die_with_owner=self.die_with_owner,
                cwd=self.data_dir.parent if self.data_dir else None,  # one the account can enter
            )

    def _admin_url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def _accepts(self) -> bool:
        try:
            psycopg.connect(self._admin_url(), connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            return False

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

    def _output(self) -> str:
        """What initdb and postgres wrote since this start (the log keeps earlier ones)."""
        try:
            with self.log_path.open("rb") as log_file:
                log_file.seek(self._log_offset)
                return log_file.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self._output().splitlines()[-lines:]) or "(empty log)"

    def _failure(self, what: str) -> str:
        return (
            f"PostgreSQL on 127.0.0.1:{self.port} {what}; the end of its log "
            f"{self.log_path}:\n{self.log_tail()}"
        )

    def _stop_process(self, grace: float = STOP_GRACE_S) -> None:
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

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop the server and delete its data directory; safe to call twice."""
        self._stop_process(grace)
        if self.lease is not None:
            self.lease.release()  # removes the data directory
            self.lease = None


class ExternalDatabase(Database):
    """A database someone else runs (``--database-url``): the run works in a schema of its
    own, ``kafka_replay_<id>``, and :meth:`stop` drops exactly that schema."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres") or not parts.netloc.rpartition("@")[2]:
            raise ValueError(
                f"{redact(url)} is not a PostgreSQL URL with a host: "
                "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
            )
        self.base_url = url
        self.schema = f"kafka_replay_{secrets.token_hex(6)}"
        self._created = False

    @property
    def url(self) -> str:
        parts = urlsplit(self.base_url)
        pairs = _query_pairs(parts.query)
        options = " ".join(v for k, v in pairs if k == "options")
        search_path = f"-csearch_path={self.schema}"
        pairs = [(k, v) for k, v in pairs if k != "options"]
        pairs.append(("options", f"{options} {search_path}".strip()))
        return urlunsplit(parts._replace(query=_encode(pairs)))

    @property
    def jdbc_url(self) -> str:
        parts = urlsplit(self.base_url)
        userinfo, _, hosts = parts.netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        renamed = {"connect_timeout": "connectTimeout", "application_name": "ApplicationName"}
        pairs = [(name, unquote(value)) for name, value in (("user", user), ("password", password))]
        pairs = [(k, v) for k, v in pairs if v]
        pairs += [(renamed.get(k, k), v) for k, v in _query_pairs(parts.query)]
        pairs.append(("currentSchema", self.schema))
        return f"jdbc:postgresql://{hosts}{parts.path}?{_encode(pairs)}"

    def start(self) -> Self:
        """Create the run's schema; :class:`PostgresError` within seconds if nobody answers."""
        create = sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema))
        with self._connect(self.base_url) as connection:
            try:
                connection.execute(create)
            except psycopg.Error as exc:
                where = redact(self.base_url)
                message = f"could not create schema {self.schema} in {where}: {exc}"
                raise PostgresError(message) from exc
        self._created = True
        return self

    def stop(self) -> None:
        """``DROP SCHEMA ... CASCADE`` of the run's schema, refused (and rolled back) if the
        cascade would reach anything outside it: a view, key or column of the team's own."""
        if not self._created:
            return
        with self._connect(self.base_url, autocommit=False) as connection:
            connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            found = connection.execute(
                "SELECT oid FROM pg_namespace WHERE nspname = %s", (self.schema,)
            ).fetchone()
            if found is not None:
                self._drop(connection, found[0])
        self._created = False

    def _drop(self, connection: psycopg.Connection[Any], namespace: int) -> None:
        """Drop the schema in a transaction that sees no one else's changes, so anything that
        went missing outside it went with it."""
        before = set(connection.execute(_OUTSIDE, {"ns": namespace}).fetchall())
        connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(self.schema)))
        lost = before - set(connection.execute(_OUTSIDE, {"ns": namespace}).fetchall())
        if not lost:
            return
        connection.rollback()
        described = [
            row[0]
            for address in sorted(lost)[:10]
            if (row := connection.execute(_DESCRIBE, address).fetchone()) is not None
        ]
        raise PostgresError(
            f"kept schema {self.schema} in {redact(self.base_url)}: dropping it would also drop "
            f"{len(lost)} object(s) outside it ({'; '.join(described)}); "
            f"look, then DROP SCHEMA {self.schema} CASCADE yourself"
        )


#: Catalog rows outside a schema that ``DROP SCHEMA ... CASCADE`` could take with it, as
#: ``pg_describe_object`` addresses: relations, columns, types, functions and constraints
#: elsewhere, and the defaults, triggers, rules and policies of tables elsewhere. ``pg_toast``
#: is not elsewhere: the toast tables there go with the schema's own tables.
_OUTSIDE = """
SELECT 'pg_class'::regclass::oid, oid, 0 FROM pg_class WHERE relnamespace {away}
UNION ALL SELECT 'pg_class'::regclass::oid, a.attrelid, a.attnum
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  WHERE c.relnamespace {away} AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL SELECT 'pg_type'::regclass::oid, oid, 0 FROM pg_type WHERE typnamespace {away}
UNION ALL SELECT 'pg_proc'::regclass::oid, oid, 0 FROM pg_proc WHERE pronamespace {away}
UNION ALL SELECT 'pg_constraint'::regclass::oid, oid, 0
  FROM pg_constraint WHERE connamespace {away}
UNION ALL SELECT 'pg_attrdef'::regclass::oid, d.oid, 0
  FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid WHERE c.relnamespace {away}
UNION ALL SELECT 'pg_trigger'::regclass::oid, t.oid, 0
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace {away}
UNION ALL SELECT 'pg_rewrite'::regclass::oid, r.oid, 0
  FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class WHERE c.relnamespace {away}
UNION ALL SELECT 'pg_policy'::regclass::oid, p.oid, 0
  FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE c.relnamespace {away}
""".format(away="NOT IN (%(ns)s::oid, 'pg_toast'::regnamespace)")
_DESCRIBE = "SELECT pg_describe_object(%s, %s, %s)"
