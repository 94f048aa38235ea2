"""``kafka-replay run`` of a definition with a ``[sink]``, through the real command line: the
mistakes a ``[sink]`` can hold, named once the app ran (a team's database that does not answer
is refused before any run: ``test_bad_input.py``), and a team's database (``--database-url``)
left as it was by a run stopped with Ctrl-C (a run killed with -9: ``test_postgres.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_replay.servers.paths import REGISTRY_ENV
from kafka_replay.servers.ports import free_ports
from kafka_replay.sinks.database import PostgresError
from kafka_replay.sinks.postgres import PostgresServer, postgres_unavailable
from kafka_replay.waiting import wait_for
from tests.test_bad_input import ROOT, ROW_ENV, ctrl_c_when, kafka_replay, leftovers

pytestmark = pytest.mark.skipif(
    postgres_unavailable() is not None, reason=postgres_unavailable() or ""
)

#: A few seconds of a billing service upserting charges, no fault: the sink is what is tested.
QUICK = Path(__file__).parent / "sink_incidents" / "billing-quick.toml"


def _variant(directory: Path, name: str, *changes: tuple[str, str]) -> None:
    """``billing-quick`` as ``name`` in ``directory``, each ``(old, new)`` text replaced."""
    text = QUICK.read_text().replace('name = "billing-quick"', f'name = "{name}"')
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    (directory / f"{name}.toml").write_text(text)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The runs' temporary directory (``TMPDIR``), one the PostgreSQL account can enter: as
    root, the run's server keeps its data there, and pytest's directories are root's alone."""
    path = Path(tempfile.mkdtemp(prefix="kafka-replay-test-"))
    path.chmod(0o711)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


BILLING = 'command = "{python} -m kafka_replay_incidents.apps.billing --mode upsert --batch 50"'
#: An app given a database of its own making (one where nothing listens) instead of the run's.
ITS_OWN_DATABASE = (
    'command = """{python} -c \'import psycopg; '
    'psycopg.connect("postgresql://billing@127.0.0.1:{closed}/billing")\'"""'
)
SINK_MISTAKES = {
    # definition: (changes to billing-quick, the stage that fails, what its error says)
    "sink-no-table": (
        [('table = "charges"', 'table = "charge"')], "checker",
        ["SinkError: [sink] table 'charge' not found in the run's database (schema public of "
         "postgresql://replay@127.0.0.1:", "; its tables: charges): [sink] tables must create "
         "it, or name the table the app writes"],
    ),
    "sink-no-column": (
        [('table = "charges"', 'table = "charges"\nid_column = "evt_id"')], "checker",
        ["SinkError: [sink] id_column 'evt_id' not found in the run's database: table 'charges' "
         "has the columns event_id, student, amount_cents, charged_at"],
    ),
    "sink-bad-query": (
        [('table = "charges"', 'query = "SELECT event_id, amount_cents FROM charges WHERE paid"')],
        "checker",
        ["SinkError: [sink] query 'SELECT event_id, amount_cents FROM charges WHERE paid' failed "
         "in the run's database (schema public of postgresql://replay@127.0.0.1:",
         'column "paid" does not exist'],
    ),
    "sink-no-rows": (  # the app writes its results to a topic, not to the table
        [("output = 0", "output = 1"),
         (BILLING, 'command = "{python} -m kafka_replay_incidents.apps.batch_forwarder"')],
        "checker",
        ["SinkError: [sink] table 'charges' has no rows after the run, and no table of the run's "
         "database (schema public of postgresql://replay@127.0.0.1:", "the app wrote no row "
         "there. Did it reach the database? It is given REPLAY_DATABASE_URL and REPLAY_JDBC_URL"],
    ),
    "sink-unreachable": (
        [(BILLING, ITS_OWN_DATABASE)], "steps",
        ["exited with code 1 before it was ready; its last output", "psycopg.OperationalError: "
         'connection failed: connection to server at "127.0.0.1", port {closed} failed: '
         "Connection refused"],
    ),
}  # fmt: skip


def test_mistakes_in_a_sink_are_named_once_the_app_ran(tmp_path: Path, scratch: Path) -> None:
    """Each a run of its own in one command: its error names the mistake (in the database's
    own words where it has some), the run's outcome keeps the stage that failed, and nothing
    is left running or in the temporary directory (the run's PostgreSQL included)."""
    definitions, report = tmp_path / "definitions", tmp_path / "report"
    definitions.mkdir()
    (closed,) = free_ports(1)
    for name, (changes, _, _) in SINK_MISTAKES.items():
        filled = [(old, new.replace("{closed}", str(closed))) for old, new in changes]
        _variant(definitions, name, *filled)
    result = kafka_replay(
        ["run", *SINK_MISTAKES, "--incidents", str(definitions), "--profile", "remediated",
         "--report", str(report)],
        scratch, timeout=600,
    )  # fmt: skip
    shown = " ".join(result.stderr.split())
    assert result.returncode == 2, result.stdout + result.stderr
    runs = json.loads((report / "report.json").read_text())["runs"]
    by_name = {run["incident"]: run for run in runs}
    for name, (_, stage, says) in SINK_MISTAKES.items():
        run = by_name[name]
        assert (run["failed_stage"], run["result"]) == (stage, f"{stage} failed"), run
        error = " ".join(run["error"].split())
        for words in says:
            assert words.replace("{closed}", str(closed)) in error, error
        if stage == "checker":  # one line, no stack trace (the app's own output may have one)
            assert "\n" not in run["error"] and "Traceback" not in error, error
        assert f"error in {stage}: {error[:100]}" in shown, shown


def _objects(database: PostgresServer) -> list[tuple[str, ...]]:
    """Every schema, and every relation (table, view, index, sequence, toast) in each."""
    return database.query(
        "SELECT nspname, '', 'schema', oid::text FROM pg_namespace "
        "UNION ALL SELECT n.nspname, c.relname, c.relkind::text, c.oid::text FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace ORDER BY 1, 2, 3"
    )


def _runs_schemas(database: PostgresServer) -> list[str]:
    found = database.query(
        r"SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kafka\_replay\_%'"
    )
    return [name for (name,) in found]


def _wait_for_charges(database: PostgresServer, child: subprocess.Popen[str]) -> str:
    """The run's schema once the app has charged an event in it: the steps are under way."""

    def charged() -> str | None:
        assert child.poll() is None, child.stdout.read() if child.stdout else ""
        for schema in _runs_schemas(database):
            try:
                if database.query(f"SELECT count(*) FROM {schema}.charges") != [(0,)]:
                    return schema
            except PostgresError:  # made, its tables not yet
                pass
        return None

    message = "the app never charged an event"
    return wait_for(charged, 180, message, every_s=0.2, error=AssertionError)


def test_ctrl_c_on_a_team_database_leaves_every_other_schema_as_it_was(
    tmp_path: Path, scratch: Path
) -> None:
    definitions, registry = tmp_path / "definitions", tmp_path / "live"
    definitions.mkdir()
    # 30 s of events: the Ctrl-C comes while they stream in
    _variant(
        definitions,
        "billing-long",
        ("count = 300", "count = 3000"),
        ("budget_s = 30", "budget_s = 60"),
    )
    password = "s3cret-pw"
    marker = uuid.uuid4().hex
    with PostgresServer(tmp_path / "team") as team:
        team.execute(
            "CREATE SCHEMA billing; "
            "CREATE TABLE billing.invoices (id int PRIMARY KEY, student text, total numeric); "
            "CREATE VIEW billing.open_invoices AS SELECT id FROM billing.invoices; "
            "CREATE TABLE public.ledger (id serial PRIMARY KEY, note text); "
            "INSERT INTO billing.invoices VALUES (1, 's-1', 9.5); "
            "INSERT INTO public.ledger (note) VALUES ('the team''s own')"
        )
        before = _objects(team)
        child = subprocess.Popen(
            [sys.executable, "-m", "kafka_replay.cli", "run", "billing-long", "--incidents",
             str(definitions), "--profile", "remediated", "--database-url",
             team.url.replace("replay@", f"replay:{password}@")],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "TMPDIR": str(scratch), "SPARK_LOCAL_DIRS": str(scratch),
                 ROW_ENV: marker, REGISTRY_ENV: str(registry)},
        )  # fmt: skip

        def charging() -> str:
            schema = _wait_for_charges(team, child)
            assert (registry / "schemas" / f"{schema}.json").exists()  # noted while it runs
            return schema

        _, output = ctrl_c_when(child, charging)
        assert child.returncode == 130, output
        assert "Interrupted" in output and password not in output, output
        assert _runs_schemas(team) == []
        assert _objects(team) == before
        assert team.query("SELECT note FROM public.ledger") == [("the team's own",)]
        assert team.query("SELECT id, total FROM billing.invoices") == [(1, 9.5)]
    assert leftovers(marker) == [], "left running"
    assert not list(scratch.iterdir()), "left in the temporary directory"
    assert not list((registry / "schemas").iterdir()), "a note of a schema dropped"
