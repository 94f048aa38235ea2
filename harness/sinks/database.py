"""A database a run's apps write rows to, whoever runs it: its URLs for libpq and JDBC, the
DDL and queries the harness runs in it, and errors that never show a password."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import psycopg
from psycopg import errors, sql

from kafka_replay.servers.lifecycle import Server
from kafka_replay.servers.maven import maven_jars

JDBC_DRIVER = "org.postgresql:postgresql:42.7.14"
#: How long a connection may take before the database counts as not answering.
CONNECT_TIMEOUT_S = 5


class PostgresError(RuntimeError):
    """A database could not be started, reached or cleaned up; the message says why."""


class SinkError(PostgresError):
    """The run's database cannot give the checker a ``[sink]``'s rows: a table, column or
    query that is not there or fails, or no rows at all; the message names which."""


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
    jars = maven_jars([JDBC_DRIVER])
    artifact = JDBC_DRIVER.split(":")[1]
    return next(jar for jar in jars if jar.name.startswith(f"{artifact}-"))


class Database(Server):
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

    @property
    def where(self) -> str:
        """The schema and the database, for messages (the password hidden)."""
        return f"schema {self.schema} of {redact(self.url)}"

    @abstractmethod
    def start(self) -> Self: ...

    @abstractmethod
    def stop(self) -> None:
        """Remove what :meth:`start` made; safe to call twice."""

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
            said = _one_line(str(exc))
            raise PostgresError(f"{statement!r} failed in schema {self.schema}: {said}") from exc

    @staticmethod
    def _connect(url: str, autocommit: bool = True) -> psycopg.Connection[Any]:
        """A connection, or :class:`PostgresError` naming the URL (its password hidden)."""
        try:
            return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            message = _one_line(str(exc))  # libpq's hint comes on a line of its own
            if password := urlsplit(url).password:
                message = message.replace(password, "***").replace(unquote(password), "***")
            raise PostgresError(f"the database at {redact(url)} did not answer: {message}") from exc


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _said(exc: psycopg.Error) -> str:
    """The database's own words for an error, on one line (no ``LINE 1: ... ^`` drawing)."""
    primary = exc.diag.message_primary
    if not primary:
        return _one_line(str(exc))
    hint = exc.diag.message_hint
    return _one_line(f"{primary} ({hint})" if hint else primary)


def read_back(
    database: Database,
    table: str | None,
    query: str | None,
    columns: Mapping[str, str | None],
) -> None:
    """Check that a ``[sink]`` can be read the way the checker reads it: its ``table`` (or
    ``query``) answers in the run's schema, has each of ``columns`` (``{"id_column":
    "event_id", ...}``; None: not asked for), and holds at least one row.

    A few cheap queries, before Spark reads: :class:`SinkError` names what is missing, or
    what failed in the database's own words, instead of a stack trace from the JDBC read.
    Columns match as Spark's do, whatever their case.
    """
    relation = table if table is not None else f"({query}) AS sink"
    what = f"table {table!r}" if table is not None else f"query {query!r}"
    with Database._connect(database.url) as connection:
        heading = f"SELECT * FROM {relation} LIMIT 0"  # the columns, no rows
        try:
            cursor = connection.execute(heading)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            if table is not None and isinstance(exc, errors.UndefinedTable):
                found = ", ".join(name for name, _ in _tables(connection)) or "none"
                raise SinkError(
                    f"[sink] table {table!r} not found in the run's database ({database.where}; "
                    f"its tables: {found}): [sink] tables must create it, or name the table the "
                    "app writes"
                ) from None
            raise SinkError(
                f"[sink] {what} failed in the run's database ({database.where}): {_said(exc)}"
            ) from None
        names = [column.name for column in cursor.description or []]
        for field, column in columns.items():
            if column is not None and column.lower() not in {name.lower() for name in names}:
                raise SinkError(
                    f"[sink] {field} {column!r} not found in the run's database: {what} has "
                    f"the columns {', '.join(names) or '(none)'}"
                )
        exists = f"SELECT EXISTS (SELECT 1 FROM {relation})"
        if connection.execute(exists).fetchone() == (True,):  # type: ignore[arg-type]
            return
        empty = "has no rows" if table is not None else "returned no rows"
        elsewhere = [
            f"{name} ({rows})"
            for name, rows in _tables(connection, counted=True)
            if rows and name != (table or "").lower()
        ]
        if elsewhere:
            raise SinkError(
                f"[sink] {what} {empty} after the run, but other tables of the run's database "
                f"({database.where}) have: {', '.join(elsewhere)}; does [sink] name what the "
                "app writes?"
            )
        raise SinkError(
            f"[sink] {what} {empty} after the run, and no table of the run's database "
            f"({database.where}) has any: the app wrote no row there. Did it reach the "
            "database? It is given REPLAY_DATABASE_URL and REPLAY_JDBC_URL; its log "
            "(logs/app-*.log in the run directory) says why not"
        )


#: At most this many of the schema's tables are named (and counted) in a message.
_TABLES_SHOWN = 20


def _tables(connection: psycopg.Connection[Any], counted: bool = False) -> list[tuple[str, int]]:
    """The tables of the connection's schema (the run's), with their rows if ``counted``."""
    found = connection.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        " ORDER BY table_name LIMIT %s",
        (_TABLES_SHOWN,),
    ).fetchall()
    tables = []
    for (name,) in found:
        rows = 0
        if counted:
            count = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(name))
            rows = connection.execute(count).fetchone()[0]  # type: ignore[index]
        tables.append((name, rows))
    return tables
