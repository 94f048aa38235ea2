"""A database someone else runs (``--database-url``): the run owns one schema there."""

from __future__ import annotations

import secrets
from typing import Any, Self
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from .database import Database, PostgresError, _encode, _query_pairs, redact


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
