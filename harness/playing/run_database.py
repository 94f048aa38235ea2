"""A run's database, for an incident whose service writes rows (``[sink]``): the user's
(``--database-url``, where the run owns one schema), a container beside containerised brokers,
or a PostgreSQL server of the run's own."""

from __future__ import annotations

from collections.abc import Callable

from kafka_replay.definitions.model import Profile
from kafka_replay.history import RunHistory
from kafka_replay.sinks.database import Database, redact

from .run_options import RunOptions


def new_database(
    options: RunOptions, backend: str | None, history: RunHistory, progress: Callable[[str], None]
) -> Database:
    """The database the run will start (not started yet: the caller holds it to stop it)."""
    if options.database_url:
        from kafka_replay.sinks.external_database import ExternalDatabase

        return ExternalDatabase(options.database_url)
    if backend == "container":  # beside the brokers
        from kafka_replay.sinks.container_postgres import ContainerPostgres

        return ContainerPostgres(history.logs_dir, progress=progress)
    from kafka_replay.sinks.postgres import PostgresServer, postgres_unavailable

    reason = postgres_unavailable()
    if reason:
        raise RuntimeError(f"this incident's [sink] needs a PostgreSQL server: {reason}")
    return PostgresServer(history.logs_dir)


def start_database(
    database: Database, profile: Profile, history: RunHistory, progress: Callable[[str], None]
) -> None:
    """Start ``database`` and create the profile's ``[sink]`` tables in it."""
    assert profile.sink is not None
    progress("starting the run's database")
    database.start()
    database.execute(profile.sink.tables)
    history.write_meta(database=redact(database.url), database_schema=database.schema)
