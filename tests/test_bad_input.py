"""Bad input, through the real command line: a clear error naming the cause, exit 2, quickly,
and nothing left behind (no temporary directory, no process).

Mistakes inside a definition are named field by field in ``test_catalog_definitions.py``; here
each kind of mistake is shown to reach the user as one ``error:`` line, before any broker
starts. Rows that need a real run are beside the code they exercise: an app that exits at
start-up and an output-id function that raises (``test_catalog_cli.py``), an app that ignores
SIGTERM and is killed after the grace period (``test_apps.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_catalog_definitions import VALID, write

BROKEN_TOML = 'name = "broken"\ntitle = [\n'


def definition(change: tuple[str, str]) -> str:
    return VALID.replace(*change)


ROWS = {
    # id: (definition in a team directory or None, arguments after `kafka-replay`, what it says)
    "broken-toml": (BROKEN_TOML, ["list"], ["broken.toml", "Invalid"]),
    "unknown-step": (
        definition(('do = "produce"', 'do = "explode"')), ["list"],
        ["broken.toml", "steps[0].do", "unknown step", "produce"],
    ),
    "unknown-field": (
        definition(('workload = "w"\n', 'workload = "w"\nspeed = 3\n')), ["list"],
        ["steps[0].speed", "unknown"],
    ),
    "unknown-symptom": (
        definition(('rejected_commits = ">= 1"', 'no_such = ">= 1"')), ["list"],
        ["signature.no_such", "unknown"],
    ),
    "unknown-workload": (
        definition(('generator = "student_onboarding"', 'generator = "lottery"')), ["list"],
        ["workloads.w.generator", "unknown generator", "student_onboarding"],
    ),
    "unknown-incident": (None, ["run", "no-such-incident"], ["no incident named"]),
    "unknown-kafka-version": (
        None, ["run", "zombie-commit", "--kafka-version", "9.9.9"],
        ["Kafka 9.9.9 could not be fetched from Maven Central", "tested: 4.4.0"],
    ),
    "app-command-missing": (
        None, ["run", "zombie-commit", "--app", "/nonexistent/app --flag"],
        ["the app command '/nonexistent/app' was not found"],
    ),
    "app-module-missing": (
        None, ["run", "zombie-commit", "--app", "nosuch.module:main"],
        ["the app nosuch.module:main cannot be imported", "PYTHONPATH"],
    ),
    "bad-restart-policy": (
        None, ["run", "zombie-commit", "--restart", "sometimes"], ["sometimes", "always"],
    ),
    "no-jobs": (None, ["run", "zombie-commit", "--jobs", "0"], ["--jobs must be 1 or more"]),
    "external-cluster-cannot-be-configured": (
        None, ["run", "zombie-commit", "--kafka-bootstrap", "127.0.0.1:1"],
        ["error in start-up", "needs broker config", "cannot provide"],
    ),
    "report-of-nothing": (None, ["report", "{tmp}"], ["has no report.json", "--report DIR"]),
}  # fmt: skip


@pytest.mark.parametrize(("team", "args", "says"), list(ROWS.values()), ids=list(ROWS))
def test_bad_input_gets_a_clear_error_and_leaves_nothing(
    tmp_path: Path, team: str | None, args: list[str], says: list[str]
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if team is not None:
        write(tmp_path, team)
        argv += ["--incidents", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "TMPDIR": str(scratch), "COLUMNS": "400"},
    )  # fmt: skip
    said = " ".join(result.stderr.split())
    assert result.returncode == 2, said
    assert "error" in said and "Traceback" not in said, said
    for words in says:
        assert words in said, said
    assert not list(scratch.iterdir()), "a temporary directory was left behind"
