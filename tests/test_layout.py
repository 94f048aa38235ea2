"""The package's layout as its users and readers meet it: every package the wheel installs, no
module too long to read in one sitting, and every import path the docs name still there."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

from kafka_replay.workload.team import ENTRY_POINT_GROUP as GENERATORS

ROOT = Path(__file__).resolve().parent.parent
#: Where each installed top-level package's files are.
SOURCES = {"kafka_replay": ROOT / "harness", "kafka_replay_incidents": ROOT / "incidents"}

#: The most lines a module of the harness may have: one subject, read in one sitting. A module
#: that is data (tables of names, schemas) may be longer, and is named here.
MODULE_LINES_AT_MOST = 600
DATA_MODULES: frozenset[str] = frozenset()

#: A dotted path in the docs: a module, or a name in one.
DOTTED = re.compile(r"\bkafka_replay(?:_incidents)?(?:\.[A-Za-z_]\w*)+")


def test_the_wheel_installs_every_package() -> None:
    """``pyproject.toml`` lists packages by name: a package left out would be missing from
    the wheel, and only a team's install would find out."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {
        ".".join((top, *init.parent.relative_to(source).parts))
        for top, source in SOURCES.items()
        for init in source.rglob("__init__.py")
    }
    assert sorted(listed) == sorted(found)


def test_no_module_of_the_harness_is_too_long_to_read_in_one_sitting() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "harness").rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES_AT_MOST
        and str(path.relative_to(ROOT)) not in DATA_MODULES
    }
    assert not long, f"over {MODULE_LINES_AT_MOST} lines: {long}"


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a name (a class, a function, their attributes) in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        try:
            for name in parts[cut:]:
                found = getattr(found, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_import_path_the_docs_name_is_there() -> None:
    """A path the README or docs/ give (``kafka_replay.checker.anomaly_registry.anomaly``, ...)
    is one a team's code imports: moving a module must keep it, or change the docs with it."""
    named = {
        (path.relative_to(ROOT), dotted)
        for path in (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
        for dotted in DOTTED.findall(path.read_text())
        if dotted != GENERATORS  # a group of entry points, not a module
    }
    assert len(named) > 20  # the docs name the APIs a team uses
    missing = sorted(f"{dotted} ({path})" for path, dotted in named if not _resolves(dotted))
    assert not missing, missing


def test_a_path_that_is_not_there_is_found_missing() -> None:
    assert _resolves("kafka_replay.checker.anomaly_registry.anomaly")
    assert not _resolves("kafka_replay.checker.no_such_module")
    assert not _resolves("kafka_replay.checker.anomaly_registry.no_such_name")
