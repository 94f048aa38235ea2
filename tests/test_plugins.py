"""A team's plugin adds a run setting and a backend in one place, and every face sees them.

The plugin is a module outside the harness, found the way a team's installed package would be
(a ``kafka_replay.plugins`` entry point in a ``.dist-info`` on the path). It declares a
throwaway option once and registers the embedded broker under another name, lacking one
capability; ``run --help``, pytest's options, a lane of ``--jobs``, and one side of a
``compare`` all get them, and the incident whose step needs that capability does not apply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = """
from kafka_replay.cluster.backends import register_backend
from kafka_replay.cluster.embedded import EmbeddedCluster
from kafka_replay.replay.settings import Option, add_run_option

add_run_option(Option("team_marker", "a setting only this plugin knows", metavar="TEXT"))


@register_backend
class LiteCluster(EmbeddedCluster):
    backend = "embedded-lite"
    about = "the embedded broker under another name"
    lacks = {"create_partitions": "embedded-lite adds no partitions to a topic"}
"""
RUN_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process that has the team's plugin installed."""
    site = tmp_path_factory.mktemp("team-site")
    (site / "team_replay_plugin.py").write_text(PLUGIN)
    info = site / "team_replay_plugin-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-replay-plugin\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[kafka_replay.plugins]\nteam = team_replay_plugin\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}


def harness(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, env=env,
        timeout=RUN_TIMEOUT_S,
    )  # fmt: skip


def recorded_settings(report_dir: Path) -> list[dict[str, object]]:
    """The settings each run under ``report_dir`` recorded in its ``run.json``."""
    return [json.loads(p.read_text())["settings"] for p in sorted(report_dir.rglob("run.json"))]


def test_the_option_and_the_backend_are_offered_everywhere(plugin_env: dict[str, str]) -> None:
    for argv in (["kafka_replay.cli", "run", "--help"], ["kafka_replay.cli", "compare", "--help"]):
        shown = harness(plugin_env, *argv)
        assert shown.returncode == 0, shown.stderr
        assert "--team-marker TEXT" in shown.stdout
        assert "embedded-lite: the embedded broker under another name" in shown.stdout
    pytest_help = harness(plugin_env, "pytest", "--help", "-p", "no:cacheprovider")
    assert "--replay-team-marker=TEXT" in pytest_help.stdout, pytest_help.stderr
    assert "embedded-lite" in pytest_help.stdout


def test_a_lane_runs_on_the_plugins_backend_with_its_setting(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    report = tmp_path / "report"
    result = harness(
        plugin_env, "kafka_replay.cli", "run", "zombie-commit", "deal-flood", "--profile",
        "remediated", "--jobs", "2", "--kafka-backend", "embedded-lite", "--team-marker",
        "from-the-lanes", "--report", str(report),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    runs = {r["incident"]: r for r in json.loads((report / "report.json").read_text())["runs"]}
    assert runs["zombie-commit"]["gate"] == "pass", runs["zombie-commit"]
    assert runs["deal-flood"]["gate"] == "n/a"
    assert any("embedded-lite adds no partitions" in r for r in runs["deal-flood"]["reasons"])
    settings = recorded_settings(report / "runs")
    assert len(settings) == 2
    for each in settings:
        assert each["team_marker"] == "from-the-lanes"
        assert each["kafka_backend"] == "embedded-lite"


@pytest.mark.matrix  # CI: the lane test above, and compare's setups (test_compare_cli.py)
def test_a_compare_side_gets_the_setting_and_its_setup(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    report = tmp_path / "compare"
    result = harness(
        plugin_env, "kafka_replay.cli", "compare", "zombie-commit", "--profile", "remediated",
        "--baseline", "backend=embedded", "--candidate", "backend=embedded-lite",
        "--team-marker", "from-compare", "--report", str(report),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    for side, backend in (("baseline", "embedded"), ("candidate", "embedded-lite")):
        (settings,) = recorded_settings(report / side)
        assert settings["team_marker"] == "from-compare"
        assert settings["kafka_backend"] == backend
        assert settings["profile"] == "remediated"
