"""Fixtures the test suite shares beyond the harness's own pytest plugin."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.suite_budget import write_durations

#: Tests of the matrix tier: the same capability again in every language, payload, backend or
#: setup. CI keeps one real run of each capability; ``./dev bench matrix`` (nightly) runs these.
MATRIX = "matrix"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--matrix",
        action="store_true",
        help="also run the matrix tier (tests marked matrix), as ./dev bench matrix does",
    )
    parser.addoption(
        "--record-durations",
        metavar="PATH",
        default=None,
        help="write each test's duration (set-up, call, teardown) to PATH as JSON: the suite's "
        "budget reads tests/durations.json (tests/suite_budget.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MATRIX}: the matrix tier, run by ./dev bench matrix (and --matrix), not by ./dev test",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without ``--matrix`` the matrix tier is deselected: CI's suite keeps one run of each."""
    if config.getoption("--matrix"):
        return
    matrix = [item for item in items if item.get_closest_marker(MATRIX) is not None]
    if matrix:
        config.hook.pytest_deselected(items=matrix)
        items[:] = [item for item in items if item.get_closest_marker(MATRIX) is None]


@pytest.fixture(scope="session")
def spark(replay_spark: SparkSession) -> SparkSession:
    """The plugin's Spark session, shared with the incident items of the same process."""
    return replay_spark


#: Files whose tests took longest, named at the end of a run: where the suite's time goes.
SLOWEST_FILES = 12


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each file's test time (set-up, call and teardown, summed over the workers); with
    ``--record-durations``, each test's, written for the suite's budget."""
    each: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                each[report.nodeid] = each.get(report.nodeid, 0.0) + report.duration
    if not each:
        return
    record = terminalreporter.config.getoption("--record-durations")
    if record:
        write_durations(Path(record), each)
        terminalreporter.write_line(f"durations of {len(each)} tests written to {record}")
    spent: dict[str, float] = {}
    for nodeid, seconds in each.items():
        where = nodeid.split("::")[0]
        spent[where] = spent.get(where, 0.0) + seconds
    total = sum(spent.values())
    terminalreporter.write_sep("=", f"test time by file: {total / 60:.0f} min in all")
    for where, seconds in sorted(spent.items(), key=lambda item: -item[1])[:SLOWEST_FILES]:
        terminalreporter.write_line(f"{seconds:8.0f} s  {100 * seconds / total:4.1f}%  {where}")
