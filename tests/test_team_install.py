"""The wheel installed in a team's repository: its names meet none of the team's own.

The wheel is built from this checkout and installed, not editable, into a fresh virtual
environment (its dependencies are taken from this one's, by a path entry, so nothing is
downloaded). The team's repository has its own ``harness`` and ``incidents`` packages, a unit
test of its own, a ``conftest.py`` that defines ``--app``, and an incident directory in its
``pyproject.toml``. There its plain ``pytest`` runs its own test only, ``kafka-replay list``
shows the catalog, a JVM reference app replays an incident from the installed wheel, and
``pytest -m incident`` replays a catalog item.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 900
TEAM_FILES = {
    "harness/__init__.py": "def helper() -> int:\n    return 1\n",
    "incidents/__init__.py": "KNOWN = ('billing-outage',)\n",
    "tests/test_team.py": (
        "from harness import helper\nfrom incidents import KNOWN\n\n\n"
        "def test_team_code():\n    assert helper() == 1 and KNOWN\n"
    ),
    "conftest.py": (
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--app', default='billing', help='the team option')\n"
    ),
    "pyproject.toml": '[tool.kafka-replay]\nincidents = ["ops/incidents"]\n',
    "ops/incidents/.keep": "",
}


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A team repository and the environment of a fresh venv with the wheel installed."""
    scratch = tmp_path_factory.mktemp("install")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(scratch / "dist"), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (scratch / "dist").glob("kafka_replay-*.whl")
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    repo = scratch / "team"
    for name, text in TEAM_FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = str(repo)  # as the action's gate script does: the team's code first
    return repo, env


def run(repo: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=repo, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


def test_the_wheel_carries_what_runs_need(team: tuple[Path, dict[str, str]]) -> None:
    repo, env = team
    found = run(repo, env, "python", "-c", (
        "import kafka_replay, kafka_replay_incidents, importlib.resources as r;"
        "print(kafka_replay.__file__);"
        "print(sorted(p.name for p in (r.files('kafka_replay_incidents') / 'apps' / 'jvm')"
        ".iterdir()))"
    ))  # fmt: skip
    assert found.returncode == 0, found.stderr
    where, java = found.stdout.splitlines()
    assert "site-packages" in where and str(ROOT) not in where
    assert "Contract.java" in java


def test_the_teams_plain_pytest_runs_its_own_tests_only(
    team: tuple[Path, dict[str, str]],
) -> None:
    repo, env = team
    result = run(repo, env, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout and "incident[" not in result.stdout


def test_the_catalog_is_listed(team: tuple[Path, dict[str, str]]) -> None:
    repo, env = team
    listed = run(repo, env, "kafka-replay", "list")
    assert listed.returncode == 0, listed.stderr
    assert "zombie-commit" in listed.stdout


@pytest.mark.matrix  # CI: the JVM apps in tests/test_jvm_apps.py, the sources in the wheel
def test_a_jvm_app_replays_from_the_installed_wheel(
    team: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = team
    replayed = run(
        repo, env, "kafka-replay", "run", "zombie-commit", "--profile", "remediated",
        "--client-library", "kafka-clients==3.9.1", "--report", str(tmp_path / "out"),
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "pass zombie-commit [remediated]" in replayed.stderr


def test_the_catalog_items_run_when_asked_for(team: tuple[Path, dict[str, str]]) -> None:
    repo, env = team
    result = run(
        repo, env, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "incident",
        "-k", "zombie-commit-remediated",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
