"""The database a run gives its apps: a real PostgreSQL per run, or a schema in a team's own.

The run's own server comes in two kinds, the machine's PostgreSQL (Debian's package) and the
same in a container (the container backend's): what holds for both is tested on both, each
skipping without what it needs (the server programs, a Docker daemon).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import psutil
import psycopg
import pytest
from pyspark.sql import SparkSession

from kafka_replay.servers.docker import docker_client
from kafka_replay.servers.maven import jdbc_driver_class
from kafka_replay.servers.paths import REGISTRY_ENV
from kafka_replay.servers.reaper import LEASE_ENV, reap_orphans
from kafka_replay.sinks import local_postgres
from kafka_replay.sinks.container_postgres import ContainerPostgres
from kafka_replay.sinks.database import (
    CONNECT_TIMEOUT_S,
    PostgresError,
    SinkError,
    postgres_jdbc_jar,
    read_back,
    redact,
)
from kafka_replay.sinks.external_database import ExternalDatabase
from kafka_replay.sinks.local_postgres import LocalPostgres
from kafka_replay.sinks.postgres import (
    BIN_ENV,
    PostgresServer,
    find_postgres_bin,
    postgres_unavailable,
)
from kafka_replay.sinks.postgres_image import build_postgres_image
from kafka_replay.waiting import wait_for
from tests.server_helpers import killed_owner, port_taken_first

needs_postgres = pytest.mark.skipif(
    postgres_unavailable() is not None, reason=postgres_unavailable() or ""
)

#: What a team's database holds before a run: its own table, which a run must leave alone.
TEAM_TABLE = "CREATE TABLE IF NOT EXISTS public.ledger (id int PRIMARY KEY, note text)"
CHARGES = "CREATE TABLE charges (event_id text PRIMARY KEY, amount numeric)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    with PostgresServer(tmp_path_factory.mktemp("postgres")) as running:
        yield running


@pytest.fixture(scope="module")
def spark_with_driver(spark: SparkSession) -> SparkSession:
    """The shared session, with PostgreSQL's driver added the way ``ADD JAR`` adds one: to
    the executors and to the driver's class loader for this thread."""
    spark.sql(f"ADD JAR '{postgres_jdbc_jar()}'")
    return spark


def _processes(server: PostgresServer) -> list[psutil.Process]:
    """The postmaster and its children (checkpointer, walwriter, a backend per session...)."""
    assert server.process is not None
    postmaster = psutil.Process(server.process.pid)
    return [postmaster, *postmaster.children()]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _shared_memory_ids() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[1]) for line in lines}


def _catalog(database: PostgresServer, schema: str) -> list[tuple[str, ...]]:
    """Every schema, table and column the server's database has, but ``schema``'s own."""
    return database.query(
        "SELECT 'schema', schema_name, '' FROM information_schema.schemata "
        f"WHERE schema_name <> '{schema}' "
        "UNION ALL SELECT 'table', table_schema, table_name FROM information_schema.tables "
        f"WHERE table_schema <> '{schema}' "
        "UNION ALL SELECT 'column', table_schema || '.' || table_name, column_name "
        f"FROM information_schema.columns WHERE table_schema <> '{schema}' ORDER BY 1, 2, 3"
    )


D = TypeVar("D", bound=LocalPostgres)


@dataclass(frozen=True)
class Kind(Generic[D]):
    """One kind of the run's own server, and where a test looks for what one holds."""

    name: str
    make: Callable[[Path], D]
    unavailable: Callable[[], str | None]
    #: Where a running one's data lives: its data directory, or its container.
    home: Callable[[D], object]
    #: What a stopped or failed one still holds of the machine's: nothing, when all is well.
    leftovers: Callable[[D], list[str]]

    def __str__(self) -> str:
        return self.name


def _server_leftovers(server: PostgresServer) -> list[str]:
    assert server.process is not None and server.data_dir is not None  # postgres was launched
    left = [f"postmaster {server.process.pid}"] if server.process.poll() is None else []
    if server.data_dir.exists():
        left.append(str(server.data_dir))
    return left


def _container_leftovers(database: ContainerPostgres) -> list[str]:
    assert database.name  # a container was launched
    found = docker_client().containers.list(all=True, filters={"name": database.name})
    left = [container.name for container in found]
    if database.container is not None:
        left.append("its container, not forgotten")
    return left


def _container_unavailable() -> str | None:
    """Why no container can start here; where one can, the image is built now, so that no
    test times a start with the build in it."""
    if (reason := ContainerPostgres.unavailable()) is not None:
        return f"no Docker daemon for PostgreSQL in a container: {reason}"
    build_postgres_image()
    return None


KINDS: list[Kind[Any]] = [
    Kind("packages", PostgresServer, postgres_unavailable, lambda s: s.data_dir, _server_leftovers),
    Kind(
        "container",
        ContainerPostgres,
        _container_unavailable,
        lambda d: d.name,
        _container_leftovers,
    ),
]


def _available(kind: Kind[Any]) -> Kind[Any]:
    if (reason := kind.unavailable()) is not None:
        pytest.skip(reason)
    return kind


@pytest.fixture(params=KINDS, ids=str)
def kind(request: pytest.FixtureRequest) -> Kind[Any]:
    return _available(request.param)


@pytest.fixture(scope="module", params=KINDS, ids=str)
def own_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalPostgres]:
    """A running server of each kind, shared by the module's tests."""
    kind = _available(request.param)
    with kind.make(tmp_path_factory.mktemp(kind.name)) as running:
        yield running


def test_the_server_programs_come_from_their_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("initdb", "pg_ctl", "postgres"):
        program = tmp_path / name
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    monkeypatch.setenv(BIN_ENV, str(tmp_path))
    assert find_postgres_bin() == tmp_path

    (tmp_path / "initdb").unlink()
    assert find_postgres_bin() is None
    reason = postgres_unavailable()
    assert reason is not None and "apt-get install postgresql" in reason and BIN_ENV in reason
    with pytest.raises(PostgresError, match="apt-get install postgresql"):
        PostgresServer(tmp_path / "run").start()


def test_urls_put_the_runs_schema_first_and_hide_the_password() -> None:
    database = ExternalDatabase(
        "postgresql://team:p%40ss@db.internal:6432/orders?sslmode=require&options=-cwork_mem%3D8MB"
    )
    schema = database.schema
    assert schema.startswith("kafka_replay_") and schema == schema.lower()
    assert database.url == (
        "postgresql://team:p%40ss@db.internal:6432/orders?sslmode=require"
        f"&options=-cwork_mem%3D8MB%20-csearch_path%3D{schema}"
    )
    assert database.jdbc_url == (
        "jdbc:postgresql://db.internal:6432/orders?user=team&password=p%40ss"
        f"&sslmode=require&options=-cwork_mem%3D8MB&currentSchema={schema}"
    )
    assert ExternalDatabase("postgresql://a@h/d").schema != schema  # each run its own
    assert redact(database.url).startswith("postgresql://team:***@db.internal:6432/orders?")
    assert redact("postgres://h/d?user=u&password=x") == "postgres://h/d?user=u&password=***"
    with pytest.raises(ValueError, match="not a PostgreSQL URL"):
        ExternalDatabase("mysql://u:secret@h/d")


def test_a_table_made_in_the_runs_own_server_reads_back(own_server: LocalPostgres) -> None:
    assert own_server.url == f"postgresql://replay@127.0.0.1:{own_server.port}/replay"
    own_server.execute("CREATE TABLE readings (id int PRIMARY KEY, value text)")
    with psycopg.connect(own_server.url) as connection:  # as an app would
        connection.execute("INSERT INTO readings VALUES (1, 'one'), (2, 'two')")
    readings = own_server.query("SELECT id, value FROM readings ORDER BY id")
    assert readings == [(1, "one"), (2, "two")]
    where = own_server.query("SELECT current_schema(), current_database()")
    assert where == [("public", "replay")] and own_server.schema == "public"
    settings = dict(own_server.query("SELECT name, setting FROM pg_settings"))
    assert settings["listen_addresses"] == "127.0.0.1"
    assert (settings["fsync"], settings["synchronous_commit"]) == ("off", "off")
    rules = own_server.query(
        "SELECT type, address, auth_method FROM pg_hba_file_rules ORDER BY line_number"
    )
    assert rules == [("local", None, "trust"), ("host", "127.0.0.1", "trust")]
    with pytest.raises(PostgresError, match="no_such_table"):
        own_server.query("SELECT * FROM no_such_table")


def test_spark_reads_the_own_servers_table_through_its_jdbc_url(
    own_server: LocalPostgres, spark_with_driver: SparkSession
) -> None:
    assert (
        own_server.jdbc_url == f"jdbc:postgresql://127.0.0.1:{own_server.port}/replay?user=replay"
    )
    jar = postgres_jdbc_jar()
    assert jar.name == "postgresql-42.7.14.jar"
    driver = jdbc_driver_class([jar])
    assert driver == "org.postgresql.Driver"
    own_server.execute(CHARGES + "; INSERT INTO charges VALUES ('e-1', 12.50), ('e-2', 3)")
    rows = (
        spark_with_driver.read.format("jdbc")
        .option("url", own_server.jdbc_url)
        .option("dbtable", "charges")
        .option("driver", driver)
        .load()
        .orderBy("event_id")
        .collect()
    )
    assert [(row.event_id, float(row.amount)) for row in rows] == [("e-1", 12.5), ("e-2", 3.0)]


@needs_postgres
def test_stop_ends_every_process_and_removes_the_data(tmp_path: Path) -> None:
    server = PostgresServer(tmp_path).start()
    assert server.data_dir is not None and (server.data_dir / "PG_VERSION").is_file()
    pids = [process.pid for process in _processes(server)]
    assert len(pids) > 1  # the postmaster has its helpers

    server.stop()
    assert all(_gone(pid) for pid in pids)
    assert _server_leftovers(server) == [] and server.lease is None
    assert "database system is shut down" in (tmp_path / "postgres.log").read_text()
    server.stop()  # a second stop does nothing


def test_a_server_that_cannot_start_says_why_and_leaves_nothing(
    kind: Kind[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(local_postgres.SETTINGS, "no_such_parameter", "1")
    server = kind.make(tmp_path)
    started = time.monotonic()
    with pytest.raises(PostgresError, match="exited with") as failed:
        server.start()
    assert 'unrecognized configuration parameter "no_such_parameter"' in str(failed.value)
    assert time.monotonic() - started < 20
    assert kind.leftovers(server) == [] and server.lease is None


def test_a_port_taken_before_the_server_binds_it_means_a_fresh_one(
    kind: Kind[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with port_taken_first(monkeypatch, local_postgres) as taken, kind.make(tmp_path) as server:
        assert server.port != taken
        assert server.query("SELECT 1") == [(1,)]
    assert "Address already in use" in (tmp_path / "postgres.log").read_text()


def test_two_servers_at_once_get_their_own_ports_and_data(kind: Kind[Any], tmp_path: Path) -> None:
    with kind.make(tmp_path / "a") as first, kind.make(tmp_path / "b") as second:
        assert first.port != second.port and kind.home(first) != kind.home(second)
        first.execute("CREATE TABLE only_here (id int)")
        assert second.query("SELECT to_regclass('only_here') IS NULL") == [(True,)]


@needs_postgres
def test_a_crashed_owners_server_is_reaped(tmp_path: Path) -> None:
    state = killed_owner(
        f"""
        import psutil
        from pathlib import Path
        from kafka_replay.sinks.postgres import PostgresServer

        server = PostgresServer(Path({str(tmp_path)!r}), die_with_owner=False).start()
        postmaster = psutil.Process(server.process.pid)
        lines = (server.data_dir / "postmaster.pid").read_text().splitlines()
        state = {{
            "pid": postmaster.pid,
            "children": [child.pid for child in postmaster.children()],
            "token": server.lease.token,
            "data_dir": str(server.data_dir),
            "shmid": int(lines[6].split()[1]),
        }}
        """,
        tmp_path,
        "server",
    )
    assert psutil.Process(state["pid"]).environ().get(LEASE_ENV) == state["token"]
    assert state["shmid"] in _shared_memory_ids()

    assert state["pid"] in reap_orphans()  # what the next start does first
    assert all(_gone(pid) for pid in [state["pid"], *state["children"]])
    assert not Path(state["data_dir"]).exists()
    wait_for(  # the segment goes when its last child has exited
        lambda: state["shmid"] not in _shared_memory_ids(),
        10,
        "the server's shared memory outlived it",
        every_s=0.05,
        error=AssertionError,
    )


@needs_postgres
def test_an_external_database_is_touched_only_in_its_own_schema(server: PostgresServer) -> None:
    server.execute(
        TEAM_TABLE + "; INSERT INTO public.ledger VALUES (1, 'the team''s') ON CONFLICT DO NOTHING"
    )
    database = ExternalDatabase(server.url + "?application_name=replay-test")
    before = _catalog(server, database.schema)

    with database:
        assert _catalog(server, database.schema) == before  # only its schema is new
        assert server.query(
            f"SELECT count(*) FROM information_schema.schemata "
            f"WHERE schema_name = '{database.schema}'"
        ) == [(1,)]
        with psycopg.connect(database.url) as app:  # the app's own, unqualified DDL
            app.execute(CHARGES)
            app.execute("INSERT INTO charges VALUES ('e-1', 1)")
        assert server.query(
            "SELECT table_schema FROM information_schema.tables WHERE table_name = 'charges'"
            " AND table_schema <> 'public'"
        ) == [(database.schema,)]
        assert database.query("SELECT event_id FROM charges") == [("e-1",)]
        database.execute("CREATE INDEX charges_amount ON charges (amount)")

    assert _catalog(server, database.schema) == before
    assert server.query(
        f"SELECT to_regnamespace('{database.schema}') IS NULL, count(*) FROM public.ledger"
    ) == [(True, 1)]
    database.stop()  # a second stop does nothing


@needs_postgres
def test_spark_reads_an_external_schema_through_its_jdbc_url(
    server: PostgresServer, spark_with_driver: SparkSession
) -> None:
    with ExternalDatabase(server.url) as database:
        database.execute(CHARGES + "; INSERT INTO charges VALUES ('x-1', 7)")
        frame = (
            spark_with_driver.read.format("jdbc")
            .option("url", database.jdbc_url)
            .option("dbtable", "charges")  # unqualified: currentSchema finds it
            .option("driver", "org.postgresql.Driver")
            .load()
        )
        assert [row.event_id for row in frame.collect()] == ["x-1"]


@needs_postgres
def test_a_drop_that_would_reach_outside_the_schema_is_refused(server: PostgresServer) -> None:
    database = ExternalDatabase(server.url).start()
    try:
        database.execute("CREATE TABLE shared (id int PRIMARY KEY)")
        server.execute(f"CREATE VIEW public.shared_ids AS SELECT id FROM {database.schema}.shared")
        with pytest.raises(PostgresError, match=r"kept schema .*shared_ids") as refused:
            database.stop()
        assert f"DROP SCHEMA {database.schema} CASCADE" in str(refused.value)
        assert server.query(
            f"SELECT to_regclass('public.shared_ids') IS NOT NULL, "
            f"to_regclass('{database.schema}.shared') IS NOT NULL"
        ) == [(True, True)]
    finally:
        server.execute("DROP VIEW IF EXISTS public.shared_ids")
        database.stop()
    assert server.query(f"SELECT to_regnamespace('{database.schema}')") == [(None,)]


@needs_postgres
def test_a_schema_left_by_a_killed_run_is_dropped_by_the_next_run_on_that_database(
    server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "registry"  # private: no other test's notes; the child inherits it
    monkeypatch.setenv(REGISTRY_ENV, str(registry))
    server.execute(TEAM_TABLE)
    password = "n0t-on-disk"  # trust auth takes any password: here it is only to be kept off disk
    url = server.url.replace("replay@", f"replay:{password}@")
    orphan = killed_owner(
        f"""
        from kafka_replay.sinks.external_database import ExternalDatabase

        database = ExternalDatabase({url!r}).start()
        database.execute("CREATE TABLE charges (event_id text PRIMARY KEY)")
        state = database.schema
        """,
        tmp_path,
        "schema",
    )
    assert server.query(f"SELECT to_regnamespace('{orphan}') IS NOT NULL") == [(True,)]
    (note,) = (registry / "schemas").iterdir()
    assert note.name == f"{orphan}.json" and note.stat().st_mode & 0o777 == 0o600
    assert password not in note.read_text()
    before = _catalog(server, orphan)

    with ExternalDatabase(server.url) as following:  # the same database as the same user
        assert server.query(f"SELECT to_regnamespace('{orphan}') IS NULL") == [(True,)]
        with ExternalDatabase(server.url):  # a live run's schema is no one's to drop
            assert server.query(f"SELECT to_regnamespace('{following.schema}') IS NOT NULL") == [
                (True,)
            ]
    assert _catalog(server, orphan) == before
    assert list((registry / "schemas").iterdir()) == []


@needs_postgres
def test_a_user_who_may_not_make_a_schema_is_told_before_any_run(server: PostgresServer) -> None:
    server.execute("DROP ROLE IF EXISTS reader; CREATE ROLE reader LOGIN")
    with pytest.raises(PostgresError, match="user reader may not create a schema") as refused:
        ExternalDatabase(server.url.replace("replay@", "reader:pw@")).check_reachable()
    assert "GRANT CREATE ON DATABASE replay TO reader" in str(refused.value)
    assert "reader:***@" in str(refused.value) and ":pw@" not in str(refused.value)
    ExternalDatabase(server.url).check_reachable()  # its owner may


@needs_postgres
def test_a_sink_is_read_back_before_spark_reads_it(server: PostgresServer) -> None:
    """What the checker asks before its JDBC read: each mistake named in one line."""
    with ExternalDatabase(server.url) as database:
        database.execute(
            "CREATE TABLE charges (event_id text, amount_cents bigint); "
            "CREATE TABLE charge_log (event_id text); "
            "INSERT INTO charge_log SELECT 'e-' || n FROM generate_series(1, 3) n"
        )
        columns = {"id_column": "event_id", "effect_column": "amount_cents"}

        def said(table: str | None, query: str | None, **changed: str) -> str:
            with pytest.raises(SinkError) as error:
                read_back(database, table, query, {**columns, **changed})
            return str(error.value)

        where = f"schema {database.schema} of {server.url}"
        assert said("charge", None) == (
            f"[sink] table 'charge' not found in the run's database ({where}; its tables: "
            "charge_log, charges): [sink] tables must create it, or name the table the app writes"
        )
        assert said("charges", None, effect_column="amount") == (
            "[sink] effect_column 'amount' not found in the run's database: table 'charges' has "
            "the columns event_id, amount_cents"
        )
        assert said(None, "SELECT event_id FROM charges WHERE") == (
            "[sink] query 'SELECT event_id FROM charges WHERE' failed in the run's database "
            f'({where}): syntax error at or near ")"'  # read as (QUERY) AS sink
        )
        assert said("charges", None) == (
            "[sink] table 'charges' has no rows after the run, but other tables of the run's "
            f"database ({where}) have: charge_log (3); does [sink] name what the app writes?"
        )
        database.execute("INSERT INTO charges VALUES ('e-1', 500)")
        read_back(database, "CHARGES", None, {"id_column": "EVENT_ID"})  # any case, as Spark
        read_back(database, None, "SELECT event_id, amount_cents FROM charges", columns)


def test_a_database_that_does_not_answer_fails_fast_with_its_password_hidden() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(PostgresError, match=rf"127\.0\.0\.1:{port}") as refused:
        ExternalDatabase(f"postgresql://team:s3cret@127.0.0.1:{port}/orders").start()
    assert "team:***@" in str(refused.value) and "s3cret" not in str(refused.value)
    assert time.monotonic() - started < 2

    with socket.socket() as silent:  # accepts connections, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"postgresql://team@127.0.0.1:{silent.getsockname()[1]}/orders?password=s3cret"
        started = time.monotonic()
        with pytest.raises(PostgresError, match="did not answer") as silent_error:
            ExternalDatabase(url).start()
    assert time.monotonic() - started < CONNECT_TIMEOUT_S + 3
    assert "password=***" in str(silent_error.value) and "s3cret" not in str(silent_error.value)
