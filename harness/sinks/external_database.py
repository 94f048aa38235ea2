"""A database someone else runs (``--database-url``): the run owns one schema there.

A run drops its schema when it ends, a Ctrl-C too. One killed before it could (kill -9, a
crash) leaves it; so each run notes its schema in the lease registry while the schema lives
(``<registry>/schemas/<schema>.json``: the schema, the database as ``USER@HOST:PORT/DB``, never
a password, and the run's process), and the next run on this machine that uses the same
database as the same user drops the schemas whose runs are gone, with the same care as its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import socket
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote, urlsplit, urlunsplit

import psutil
import psycopg
from psycopg import sql

from kafka_replay.servers.paths import registry_dir

from .database import Database, PostgresError, _encode, _query_pairs, redact

log = logging.getLogger(__name__)

#: The schemas runs make: only such names are ever dropped from a note.
SCHEMA_NAME = re.compile(r"kafka_replay_[0-9a-f]{12}")


class SchemaKept(PostgresError):
    """A run's schema was not dropped: the drop would have reached outside it."""


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

    @property
    def where(self) -> str:
        return f"schema {self.schema} of {redact(self.base_url)}"

    def check_reachable(self) -> None:
        """:class:`PostgresError` unless the database answers (within seconds) and lets its
        user create a schema there, which each run does."""
        with self._connect(self.base_url) as connection:
            user, database, may = connection.execute(
                "SELECT current_user, current_database(), "
                "has_database_privilege(current_database(), 'CREATE')"
            ).fetchone() or ("?", "?", False)
        if not may:
            raise PostgresError(
                f"user {user} may not create a schema in database {database} at "
                f"{redact(self.base_url)} (each run works in a schema of its own there): "
                f"GRANT CREATE ON DATABASE {database} TO {user}"
            )

    def start(self) -> Self:
        """Create the run's schema; :class:`PostgresError` within seconds if nobody answers.
        First, drop the schemas killed runs left in this database (see the module)."""
        create = sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema))
        with self._connect(self.base_url) as connection:
            self._reap_orphans()
            _note(self.schema, self.base_url)
            self._created = True  # before it exists: a Ctrl-C as it is made still drops it
            try:
                connection.execute(create)
            except psycopg.Error as exc:
                self._created = False
                _forget(self.schema)
                where = redact(self.base_url)
                message = f"could not create schema {self.schema} in {where}: {exc}"
                raise PostgresError(message) from exc
        return self

    def stop(self) -> None:
        """``DROP SCHEMA ... CASCADE`` of the run's schema, refused (and rolled back) if the
        cascade would reach anything outside it: a view, key or column of the team's own."""
        if not self._created:
            return
        try:
            _drop_schema(self.base_url, self.schema)
        except SchemaKept:
            _forget(self.schema)  # said, and left to the team: no later run drops it
            raise
        # a database that did not answer keeps the note: the next run drops the schema
        _forget(self.schema)
        self._created = False

    def _reap_orphans(self) -> None:
        """Drop the schemas that runs on this machine, since killed, left in this database."""
        database = _database_key(self.base_url)
        for path, note in _notes():
            if note.get("database") != database or note.get("machine") != _machine():
                continue
            if _alive(note.get("pid"), note.get("started")):
                continue
            schema = note["schema"]
            try:
                dropped = _drop_schema(self.base_url, schema)
            except SchemaKept as exc:
                log.warning("%s", exc)
            except (PostgresError, psycopg.Error) as exc:  # tried again by the next run
                log.warning("could not drop schema %s, left by a killed run: %s", schema, exc)
                continue
            else:
                if dropped:  # else killed before it made it
                    log.warning(
                        "dropped schema %s, left in %s by a run killed before its clean-up",
                        schema,
                        redact(self.base_url),
                    )
            path.unlink(missing_ok=True)


def _drop_schema(url: str, schema: str) -> bool:
    """``DROP SCHEMA ... CASCADE`` in a transaction that sees no one else's changes, so that
    anything that went missing outside the schema went with it: then it is rolled back and
    :class:`SchemaKept` says what it would have reached. False: there was no such schema."""
    with Database._connect(url, autocommit=False) as connection:
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        found = connection.execute(
            "SELECT oid FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
        if found is None:
            return False
        namespace = found[0]
        before = set(connection.execute(_OUTSIDE, {"ns": namespace}).fetchall())
        connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        lost = before - set(connection.execute(_OUTSIDE, {"ns": namespace}).fetchall())
        if not lost:
            return True
        connection.rollback()
        described = [
            row[0]
            for address in sorted(lost)[:10]
            if (row := connection.execute(_DESCRIBE, address).fetchone()) is not None
        ]
        raise SchemaKept(
            f"kept schema {schema} in {redact(url)}: dropping it would also drop "
            f"{len(lost)} object(s) outside it ({'; '.join(described)}); "
            f"look, then DROP SCHEMA {schema} CASCADE yourself"
        )


def _database_key(url: str) -> str:
    """``USER@HOST:PORT/DB``: which database a URL reaches, as whom, without its password."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    return f"{unquote(userinfo.partition(':')[0])}@{hosts.lower()}{parts.path}"


def _machine() -> str:
    """This host and process namespace: only here can a note's process be looked up (a
    container sharing the registry directory sees none of another's processes)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname()}/{namespace}"


def _alive(pid: object, started: object) -> bool:
    try:
        return isinstance(pid, int) and psutil.Process(pid).create_time() == started
    except psutil.Error:
        return False


def _notes_dir() -> Path:
    path = registry_dir() / "schemas"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _note(schema: str, url: str) -> None:
    """Note the schema this process is about to make (0600, whole or absent; no password)."""
    pid = os.getpid()
    note = {
        "schema": schema,
        "database": _database_key(url),
        "machine": _machine(),
        "pid": pid,
        "started": psutil.Process(pid).create_time(),
    }
    path = _notes_dir() / f"{schema}.json"
    partial = path.with_suffix(".part")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(note, out)
    partial.replace(path)


def _forget(schema: str) -> None:
    (_notes_dir() / f"{schema}.json").unlink(missing_ok=True)


def _notes() -> list[tuple[Path, dict[str, Any]]]:
    """The notes of schemas not dropped yet, each naming one a run made."""
    found = []
    for path in sorted(_notes_dir().glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            note = json.loads(path.read_text())
            if isinstance(note, dict) and SCHEMA_NAME.fullmatch(str(note.get("schema"))):
                found.append((path, note))
    return found


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
