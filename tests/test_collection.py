"""Which items pytest collects here: ``-k incident`` is the catalog, and the suite includes it."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

from kafka_replay.definitions.catalog import catalog_dir, load_incidents
from kafka_replay.definitions.model import PROFILES
from tests.suite_budget import BUDGET_S, NEW_ITEM_S, recorded_durations, suite_cost

ROOT = Path(__file__).resolve().parent.parent


@cache
def collected(*argv: str) -> frozenset[str]:
    """The ids ``pytest --collect-only`` lists with ``argv``, run from the repository (once per
    ``argv`` in a process: the whole suite's collection serves two tests)."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return frozenset(line for line in result.stdout.splitlines() if "::" in line)


def test_the_keyword_selects_the_catalog_and_the_suite_runs_all_of_it() -> None:
    directory = catalog_dir()
    assert directory is not None
    catalog = {
        f"incidents/{incident.source.name}::incident[{incident.name}-{profile}]"
        for incident in load_incidents((directory,)).values()
        for profile in PROFILES
    }
    assert len(catalog) == 2 * len(list(directory.glob("*.toml")))
    assert collected("-k", "incident") == catalog
    assert catalog <= collected()


def test_the_suite_ci_runs_stays_within_its_budget() -> None:
    """CI's set of tests (the matrix tier left out) costs no more worker-seconds than its
    budget, by the durations the last whole run recorded (tests/suite_budget.py)."""
    ids = collected()
    cost, unrecorded = suite_cost(ids, recorded_durations())
    assert cost <= BUDGET_S, (
        f"CI's {len(ids)} tests cost {cost:.0f} worker-seconds against a budget of "
        f"{BUDGET_S:.0f} ({len(unrecorded)} not recorded yet, {NEW_ITEM_S:.0f} s each: "
        f"{unrecorded[:10]}): move a matrix of runs to the matrix tier (pytest.mark.matrix, "
        "docs/benchmarks.md), or record the durations (./dev test --record-durations "
        "tests/durations.json) if they are only unrecorded"
    )


def test_a_tests_cost_is_its_recorded_duration_or_an_items_allowance() -> None:
    durations = {"tests/test_a.py::test_one": 2.0, "incidents/a.toml::incident[a-vulnerable]": 40.0}
    ids = ["tests/test_a.py::test_one", "incidents/a.toml::incident[a-vulnerable]", "new"]
    assert suite_cost(ids, durations) == (42.0 + NEW_ITEM_S, ["new"])
    assert suite_cost([], durations) == (0.0, [])


def test_every_matrix_test_belongs_to_a_group_of_the_benchmark() -> None:
    """A test moved to the matrix tier still runs somewhere: ``./dev bench matrix`` runs its
    groups' files with ``-m matrix``, so a marked test in no group's file would run nowhere."""
    from benchmarks.matrix import GROUPS

    files = {path for paths in GROUPS.values() for path in paths}
    matrix = collected("--matrix", "-m", "matrix")
    assert matrix, "no test is marked matrix"
    assert {test.split("::")[0] for test in matrix} <= files
