"""A database a run's apps write rows to, whoever runs it: its URLs for libpq and JDBC, the
DDL and queries the harness runs in it, and errors that never show a password."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import psycopg

JDBC_DRIVER = "org.postgresql:postgresql:42.7.14"
#: How long a connection may take before the database counts as not answering.
CONNECT_TIMEOUT_S = 5


class PostgresError(RuntimeError):
    """A database could not be started, reached or cleaned up; the message says why."""


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
