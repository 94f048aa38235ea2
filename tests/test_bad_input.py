"""Bad input gets a clear error and loses nothing: through the real command line (and, where
it matters, the pytest plugin), each mistake is one ``error:`` line that names its cause and
what to do, exit 2, well within a minute, and nothing is left behind: no process started for
it (broker JVM, app, Spark JVM, Maven), no temporary directory, no port held open.

The table (``ROWS``) holds the rows of one shape; the few that need more set-up are the tests
after it:

- a definition that is not TOML, names an unknown step, field, symptom or workload: ``ROWS``
  (and ``test_a_bad_definition_is_one_collection_error_in_pytest`` for the plugin); every other
  field-by-field mistake is named in ``test_catalog_definitions.py``;
- an unknown Kafka release (Maven Central is asked, and a missing artifact fails in seconds);
- a broker property the broker itself refuses at start-up (its own words come first);
- an app command or module that is not there;
- an app that ignores SIGTERM: ``test_an_app_that_ignores_sigterm_is_killed_after_the_grace``
  (the matrix tier; CI keeps the supervisor's own, in ``test_apps.py``);
- an output-id function that raises: ``ELSEWHERE`` (``test_catalog_cli.py``, a checker failure
  is an error in the report, not a verdict);
- a port already taken: the harness always picks free ports itself and a user cannot force
  one (the listener keys are the harness's own, ``ROWS``); a port taken between the pick and
  the bind makes it pick again, ``test_a_port_taken_before_the_broker_binds_it_is_picked_again``;
- an external cluster that does not answer: named at once, before any run;
- no space where brokers keep their data: ``test_no_space_for_the_brokers_data_is_named``;
- a Spark master that does not answer, or that is no master URL: named before any run (Spark
  itself would wait a minute and then fail with "Cannot call methods on a stopped SparkContext").
- a team's database (``--database-url``) that does not answer: named before any run, its
  password hidden; the other mistakes of a ``[sink]`` come after the app ran, in
  ``test_database_sink.py``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import psutil
import pytest

from kafka_replay.cluster import EmbeddedCluster
from kafka_replay.servers.ports import accepts_connections, free_ports
from tests.test_catalog_definitions import VALID, write

ROOT = Path(__file__).resolve().parent.parent
#: Every process a row starts inherits this variable; none may carry it once the row is over.
ROW_ENV = "KAFKA_REPLAY_TEST_ROW"
#: How long a row may take: an error must come in seconds, never after a download or a hang.
ROW_TIMEOUT_S = 60

BROKEN_TOML = 'name = "broken"\ntitle = "t\npost = "000"\n'  # the title's string never ends
UNCLOSED_TOML = 'name = "broken"\ntitle = [\n'  # the file ends inside a list
#: A password given on the command line: no message may show it.
PASSWORD = "s3cret-pw"


def definition(*changes: tuple[str, str]) -> str:
    text = VALID
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return text


REFUSED_BY_BROKER = definition(
    ("[app]", '[broker]\n"offsets.retention.minutes" = -1\n\n[app]'),
)

ROWS = {
    # id: (definition in a team directory or None, arguments after `kafka-replay`, what it says)
    "broken-toml": (
        BROKEN_TOML, ["run", "broken"],
        ["broken.toml: line 2, column 11: not valid TOML", "fix the syntax"],
    ),
    "unclosed-toml": (
        UNCLOSED_TOML, ["list"],
        ["broken.toml: line 2 (the end of the file): not valid TOML",
         "the file ends before it is closed", "fix the syntax"],
    ),
    "unknown-step": (
        definition(('do = "produce"', 'do = "explode"')), ["run", "broken"],
        ["broken.toml: steps[0].do: unknown step 'explode'", "steps: produce, wait_produced"],
    ),
    "unknown-field": (
        definition(('workload = "w"\n', 'workload = "w"\nspeed = 3\n')), ["run", "broken"],
        ["broken.toml: steps[0].speed: unknown field", "allowed here: background, do, workload"],
    ),
    "unknown-symptom": (
        definition(('rejected_commits = ">= 1"', 'no_such = ">= 1"')), ["run", "broken"],
        ["broken.toml: signature.no_such: unknown symptom", "known symptoms: app_down_s"],
    ),
    "unknown-workload": (
        definition(('generator = "student_onboarding"', 'generator = "lottery"')),
        ["run", "broken"],
        ["broken.toml: workloads.w.generator: unknown generator",
         "known: student_onboarding, quiet_events"],
    ),
    "unknown-placeholder": (
        definition(("batch_forwarder", "batch_forwarder --to {output_topik}")), ["run", "broken"],
        ["broken.toml: app.command: {output_topik}: no such placeholder", "{here}"],
    ),
    "unknown-name": (None, ["run", "no-such-incident"], ["no incident named"]),
    "unknown-kafka-version": (
        None, ["run", "zombie-commit", "--kafka-version", "9.9.9"],
        ["Kafka 9.9.9 could not be fetched from Maven Central", "--kafka-version",
         "tested: 4.4.0", "every release: https://repo1.maven.org/maven2/org/apache/kafka/"],
    ),
    "broker-refuses-its-config": (
        REFUSED_BY_BROKER, ["run", "broken", "--profile", "remediated"],
        ["error in start-up", "the broker refused its config: Invalid value -1 for configuration "
         "offsets.retention.minutes: Value must be at least 1", "[broker] table"],
    ),
    "broker-refuses-its-config-up": (
        None, ["up", "--broker-config", "offsets.retention.minutes=-1"],
        ["the broker refused its config: Invalid value -1 for configuration "
         "offsets.retention.minutes", "--broker-config"],
    ),
    "port-cannot-be-chosen": (
        None, ["up", "--broker-config", "listeners=PLAINTEXT://127.0.0.1:9092"],
        ["'listeners' is set by the harness", "cannot be overridden"],
    ),
    "app-command-missing": (
        None, ["run", "zombie-commit", "--app", "/nonexistent/app --flag"],
        ["the app command '/nonexistent/app' was not found", "a command on PATH"],
    ),
    "app-file-missing": (
        None, ["run", "zombie-commit", "--app", "{python} {here}/connect/sink.json"],
        ["run under zombie-commit: names ", "/connect/sink.json, which does not exist ({here} is "],
    ),
    "app-module-missing": (
        None, ["run", "zombie-commit", "--app", "nosuch.module:main"],
        ["the app nosuch.module:main cannot be imported", "PYTHONPATH"],
    ),
    "bad-restart-policy": (
        None, ["run", "zombie-commit", "--restart", "sometimes"], ["sometimes", "always"],
    ),
    "no-jobs": (None, ["run", "zombie-commit", "--jobs", "0"], ["--jobs must be 1 or more"]),
    "external-cluster-does-not-answer": (
        None, ["run", "zombie-commit", "--kafka-bootstrap", "127.0.0.1:{closed}"],
        ["no Kafka broker answers at 127.0.0.1:{closed}", "Connection refused",
         "--kafka-bootstrap"],
    ),
    "spark-master-does-not-answer": (
        None, ["run", "zombie-commit", "--spark-master", "spark://127.0.0.1:{closed}"],
        ["Spark master spark://127.0.0.1:{closed} does not answer", "--spark-master"],
    ),
    "spark-master-is-no-url": (
        None, ["run", "zombie-commit", "--spark-master", "spark-host:7077"],
        ["Spark master 'spark-host:7077' is not a Spark master URL", "spark://HOST:PORT"],
    ),
    "report-of-nothing": (None, ["report", "{tmp}"], ["has no report.json", "--report DIR"]),
    "database-does-not-answer": (
        None, ["run", "billing-quick", "--incidents", "tests/sink_incidents", "--database-url",
               f"postgresql://team:{PASSWORD}@127.0.0.1:{{closed}}/orders"],
        ["error: --database-url: the database at postgresql://team:***@127.0.0.1:{closed}/orders "
         "did not answer", "Connection refused"],
    ),
}  # fmt: skip

#: Rows that need a whole run and live beside the code they exercise.
ELSEWHERE = {
    "output-id-raises": (
        "tests.test_catalog_cli",
        "test_a_checker_that_fails_still_leaves_the_run_in_the_report",
    ),
}


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on (it was free a moment ago)."""
    (port,) = free_ports(1)
    assert not accepts_connections(port)
    return port


T = TypeVar("T")


def ctrl_c_when(child: subprocess.Popen[str], ready: Callable[[], T]) -> tuple[T, str]:
    """Once ``ready()`` gives something, Ctrl-C ``child``: what ready gave, and all the child
    printed. A child still running after that (or after a failure) is killed."""
    try:
        seen = ready()
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return seen, output


def leftovers(marker: str) -> list[str]:
    """Processes still carrying ``marker`` in their environment, and the ports they listen on."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if process.environ().get(ROW_ENV) != marker:
                continue
            ports = [c.laddr.port for c in process.net_connections("tcp") if c.status == "LISTEN"]
        except psutil.Error:
            continue
        command = " ".join(process.info["cmdline"] or [])[:120]
        found.append(f"pid {process.pid} ({command}) listening on {ports}")
    return found


def kafka_replay(
    argv: list[str], scratch: Path, timeout: float = ROW_TIMEOUT_S, **env: str
) -> subprocess.CompletedProcess[str]:
    """``kafka-replay ARGV`` with its temporary files in ``scratch``; asserts it left nothing."""
    marker = uuid.uuid4().hex
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "TMPDIR": str(scratch), "SPARK_LOCAL_DIRS": str(scratch),
             "COLUMNS": "400", ROW_ENV: marker, **env},
    )  # fmt: skip
    assert leftovers(marker) == [], "left running"
    left = sorted(p.name for p in scratch.iterdir())
    assert not left, f"left in the temporary directory: {left}"
    return result


def said(result: subprocess.CompletedProcess[str]) -> str:
    return " ".join(result.stderr.split())


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "tmp"
    path.mkdir()
    return path


@pytest.mark.parametrize(("team", "args", "says"), list(ROWS.values()), ids=list(ROWS))
def test_bad_input_gets_a_clear_error_and_leaves_nothing(
    tmp_path: Path,
    scratch: Path,
    closed_port: int,
    team: str | None,
    args: list[str],
    says: list[str],
) -> None:
    def fill(text: str) -> str:
        return text.replace("{tmp}", str(tmp_path)).replace("{closed}", str(closed_port))

    argv = [fill(a) for a in args]
    if team is not None:
        write(tmp_path, team)
        argv += ["--incidents", str(tmp_path)]
    result = kafka_replay(argv, scratch)
    message = said(result)
    assert result.returncode == 2, message
    assert "error" in message and "Traceback" not in message, message
    assert PASSWORD not in result.stdout + result.stderr, message
    for words in says:
        assert fill(words) in message, message
    assert not accepts_connections(closed_port)


DEFINITION_ROWS = [row for row in ROWS if ROWS[row][0] is not None and ROWS[row][1][0] == "run"]


@pytest.mark.parametrize("row", [r for r in DEFINITION_ROWS if r != "broker-refuses-its-config"])
def test_a_bad_definition_is_one_collection_error_in_pytest(tmp_path: Path, row: str) -> None:
    team, _, says = ROWS[row]
    incidents = tmp_path / "incidents"
    incidents.mkdir()
    write(incidents, team)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "--replay-incidents", str(incidents), str(incidents)],
        cwd=tmp_path, capture_output=True, text=True, timeout=ROW_TIMEOUT_S,
    )  # fmt: skip
    output = " ".join(result.stdout.split())
    assert result.returncode == 2, output  # pytest's "interrupted: errors during collection"
    assert "ERROR collecting" in output and "Traceback" not in output, output
    assert "_parser.py" not in output and "definition.py" not in output, output
    for words in says:
        assert words in output, output


NOT_APPLICABLE_TO_APPS = VALID + '\n[your_app]\ntests = "the workload producer"\napplies = false\n'

#: Refusals that must be one ``error:`` line naming the file or the option, whatever the
#: terminal: id: (definition or None, arguments after ``kafka-replay``, what the line says).
ONE_LINE = {
    "report-is-a-file": (
        None, ["run", "zombie-commit", "--report", "pyproject.toml"],
        ["--report pyproject.toml is a file", "give a directory"],
    ),
    "definition-not-utf8": (
        VALID.replace('title = "t"', 'title = "caf\xe9"').encode("latin-1"), ["run", "broken"],
        ["broken.toml: (file): is not UTF-8 text (byte 0xe9 at"],
    ),
    "negative-count": (
        definition(("count = 10", "count = -5")), ["run", "broken"],
        ["broken.toml: workloads.w.count: must be 0 or more, got -5"],
    ),
    "empty-app": (None, ["run", "zombie-commit", "--app", " "], ["--app is empty"]),
    "check-without-output": (
        None, ["check", "{tmp}"], ["give the output: --output-topic", "--output-files"],
    ),
    "up-setting-without-value": (
        None, ["up", "--broker-config", "log.retention.ms"],
        ["--broker-config expects KEY=VALUE, got 'log.retention.ms'"],
    ),
    "unknown-backend": (
        None, ["run", "zombie-commit", "--kafka-backend", "nope"],
        ["kafka-replay run: argument --kafka-backend: Kafka backend 'nope' is not one of"],
    ),
    "nothing-applied": (
        NOT_APPLICABLE_TO_APPS, ["run", "broken", "--app", "python3 -c pass"],
        ["no run applied here, so nothing was tested", "--allow-not-applicable"],
    ),
    "payload-missing": (
        None, ["run", "zombie-commit", "--payload", "{tmp}/orders.toml"],
        ["orders.toml: no such file (give a TOML file of your messages)"],
    ),
    "capture-no-broker": (
        None, ["capture", "--kafka-bootstrap", "127.0.0.1:1", "--topic", "t", "--from", "-1m",
               "--to", "now", "--out", "{tmp}/t.capture"],
        ["Kafka at 127.0.0.1:1 did not answer"],
    ),
}  # fmt: skip


@pytest.mark.parametrize(("team", "args", "says"), list(ONE_LINE.values()), ids=list(ONE_LINE))
def test_a_refusal_is_one_error_line_naming_its_cause(
    tmp_path: Path, scratch: Path, team: str | bytes | None, args: list[str], says: list[str]
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if isinstance(team, bytes):
        (tmp_path / "broken.toml").write_bytes(team)
    elif team is not None:
        write(tmp_path, team)
    if team is not None:
        argv += ["--incidents", str(tmp_path)]
    result = kafka_replay(argv, scratch, COLUMNS="80")  # not a terminal, and narrow
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2, result.stderr
    assert len(errors) == 1, result.stderr
    for words in says:
        assert words in errors[0], errors[0]
    assert "Traceback" not in result.stderr


def test_rows_kept_elsewhere_exist() -> None:
    import importlib

    for module, test in ELSEWHERE.values():
        assert callable(getattr(importlib.import_module(module), test, None)), (module, test)


STUBBORN = """
name = "stubborn"
title = "An app that ignores SIGTERM"
post = "none"
guarantee = "at-least-once"
time_scale = "none"

[topics]
input = 1
output = 1

[app]
command = "{python} -m tests.apps.stubborn"

[workloads.w]
generator = "student_onboarding"
count = 20

[[steps]]
do = "start_apps"

[[steps]]
do = "produce"
workload = "w"

[[steps]]
do = "drain"
budget_s = 30

[[steps]]
do = "stop_apps"

[signature]
reprocessed = ">= 1"

[profiles.vulnerable]
description = "v"

[profiles.remediated]
description = "r"
"""


@pytest.mark.matrix  # CI keeps the supervisor's own (tests/test_apps.py), with a 0.5 s grace
def test_an_app_that_ignores_sigterm_is_killed_after_the_grace(
    tmp_path: Path, scratch: Path
) -> None:
    """Not an error: the run ends, and its lifecycle says the app was killed after the grace."""
    (tmp_path / "stubborn.toml").write_text(STUBBORN)
    report = tmp_path / "report"
    result = kafka_replay(
        ["run", "stubborn", "--incidents", str(tmp_path), "--profile", "remediated",
         "--report", str(report)],
        scratch, timeout=300,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stdout + result.stderr
    (run,) = json.loads((report / "report.json").read_text())["runs"]
    lifecycle = [
        json.loads(line)
        for line in (Path(run["run_dir"]) / "events" / "lifecycle.jsonl").read_text().splitlines()
    ]
    kinds = [event["kind"] for event in lifecycle]
    assert kinds == ["start", "stop", "killed_after_grace", "exit"], kinds
    killed, exited = lifecycle[2:]
    assert killed["grace_s"] == 10.0
    assert (exited["signal"], exited["expected"]) == ("SIGKILL", True)
    assert killed["ts"] - lifecycle[1]["ts"] >= 10.0  # SIGTERM first, SIGKILL after the grace


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_port_taken_before_the_broker_binds_it_is_picked_again(
    taken_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ports are picked free on 127.0.0.1 each start and cannot be forced (``listeners`` is the
    harness's own key); one taken between the pick and the bind is picked again."""
    import kafka_replay.cluster.nodes as nodes

    picks: list[list[int]] = []

    def first_pick_taken(count: int) -> list[int]:
        ports = free_ports(count)
        if not picks:
            ports[0] = taken_port  # as if another process took it after the pick
        picks.append(ports)
        return ports

    monkeypatch.setattr(nodes, "free_ports", first_pick_taken)
    with EmbeddedCluster(work_dir=tmp_path) as cluster:
        pids = [node.process.pid for node in cluster.nodes]
        assert len(picks) == 2 and taken_port not in picks[1]
        assert cluster.bootstrap_servers == f"127.0.0.1:{picks[1][0]}"
        assert "Address already in use" in (tmp_path / "broker-1.log").read_text()
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                   for pid in pids)  # fmt: skip
    assert not accepts_connections(picks[1][0])


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: full for a broker (needs root and permission to mount)."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here to fill: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_no_space_for_the_brokers_data_is_named(full_disk: Path, tmp_path: Path) -> None:
    write(tmp_path, VALID, "tiny")
    result = kafka_replay(  # TMPDIR is where brokers keep their data
        ["run", "tiny", "--incidents", str(tmp_path), "--profile", "vulnerable"], full_disk
    )
    message = said(result)
    assert result.returncode == 2, message
    assert "error in start-up: BrokerStartError: no space for Kafka's data in " in message
    assert f"{full_disk}: 2.0 MiB free" in message and "TMPDIR" in message, message
