"""A team's own incident directory, beside the catalog: the CLI, pytest and pyproject.toml.

The incident here is written the way docs/writing-incidents.md says, in a directory of its own
outside this repository, and replayed on real Kafka from a working directory of its own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_replay.definitions.catalog import catalog_dir, incident_directories, load_incidents
from kafka_replay.definitions.model import DefinitionError

TEAM_INCIDENT = """
name = "{name}"
title = "A service killed twice while it streams; only the transactional one keeps exactly-once"
post = "our post-mortem of 2026-03"
guarantee = "exactly-once"
seed = 11
time_scale = "300 records at 50 a second and two kills, 3-4 s apart, stand in for a day of deploys."

[topics]
input = 2
output = 2

[broker]
"group.min.session.timeout.ms" = 1000

[client]
"session.timeout.ms" = 3000
"heartbeat.interval.ms" = 500

[app]
command = "{{python}} -m {eos} --outside-transaction --work-ms 20"

[workloads.stream]
generator = "student_onboarding"
count = 300
students = 40
rate = 50.0
seed = 11

[[steps]]
do = "start_apps"

[[steps]]
do = "produce"
workload = "stream"
background = true

[[steps]]
do = "kill_at_random"
times = 2
gap_s = [3.0, 4.0]

[[steps]]
do = "drain"
budget_s = 30

[conditions]
kills = ">= 2"

[signature]
reprocessed = ">= 1"

[profiles.vulnerable]
description = "output written outside the transaction"

[profiles.remediated]
description = "output and offsets in one transaction"
app.command = "{{python}} {{here}}/apps/service.py --work-ms 20"
"""
#: The team's service, a file beside its definition ({here}/apps/service.py): the catalog's
#: transactional one, run as a script of the team's own, so that the definition names it from
#: wherever it is replayed.
SERVICE = """import runpy

runpy.run_module("kafka_replay_incidents.apps.eos_processor", run_name="__main__")
"""


def write_incident(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.toml"
    eos = "kafka_replay_incidents.apps.eos_processor"
    path.write_text(TEAM_INCIDENT.format(name=name, eos=eos))
    (directory / "apps").mkdir(exist_ok=True)
    (directory / "apps" / "service.py").write_text(SERVICE)
    return path


@pytest.mark.matrix  # CI: the same with pytest; --incidents DIR runs in test_sink_cli.py
def test_a_teams_definition_runs_with_the_cli(tmp_path: Path) -> None:
    write_incident(tmp_path / "ops" / "incidents", "double-kill")
    work = tmp_path / "elsewhere"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", "--incidents", str(tmp_path / "ops" /
         "incidents"), "double-kill", "--profile", "vulnerable", "--report",
         str(tmp_path / "report")],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "double-kill" in result.stdout and "reproduced" in result.stdout


def test_a_teams_definition_runs_with_pytest(tmp_path: Path) -> None:
    write_incident(tmp_path / "ops" / "incidents", "double-kill")
    work = tmp_path / "project"
    work.mkdir()
    (work / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--replay-incidents",
         str(tmp_path / "ops" / "incidents"), "-k", "double-kill-remediated", "-v"],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "incident[double-kill-remediated] PASSED" in result.stdout
    # the vulnerable item and the catalog were collected too (incidents were asked for)
    assert re.search(r"1 passed, (2[2-9]|[3-9]\d) deselected", result.stdout), result.stdout


def test_pyproject_names_the_teams_directories(tmp_path: Path) -> None:
    write_incident(tmp_path / "ops" / "incidents", "double-kill")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "team"\n\n[tool.kafka-replay]\nincidents = ["ops/incidents"]\n'
    )
    (tmp_path / "src").mkdir()
    directories = incident_directories(start=tmp_path / "src")
    assert directories == [catalog_dir(), (tmp_path / "ops" / "incidents").resolve()]
    listing = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "list"],
        cwd=tmp_path / "src", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    assert "double-kill" in listing.stdout and "deal-flood" in listing.stdout


def test_a_name_clash_with_the_catalog_is_a_clear_error(tmp_path: Path) -> None:
    clash = write_incident(tmp_path, "deal-flood")
    with pytest.raises(DefinitionError, match=r"'deal-flood' is already defined in .*rename one"):
        load_incidents((catalog_dir(), tmp_path))
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "list", "--incidents", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{clash}: name: 'deal-flood' is already defined" in result.stderr.replace("\n", "")


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="is not a directory of incidents"):
        load_incidents((tmp_path / "nope",))
