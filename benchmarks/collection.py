"""Collection: what the pytest plugin adds to ``pytest --collect-only`` in a project of one test.

The plugin loads in every pytest process of a project that installs the harness, whether or
not it uses Kafka, so its import must stay light (no Kafka clients, no Spark). A temporary
project holds ``test_one.py`` (``def test_one(): pass``) and an empty ``conftest.py``; in it,
this interpreter (the venv the package is installed in) runs

    python -m pytest --collect-only -q -p no:cacheprovider

with the plugin (it loads through its ``pytest11`` entry point) and with
``-p no:kafka_replay.pytest_plugin``, alternately, after one warm-up run of each. Reported: the
median wall time of each, their ratio, and whether importing the plugin imports ``pyspark``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ("-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider")
WITHOUT_PLUGIN = ("-p", "no:kafka_replay.pytest_plugin")
PYSPARK_CHECK = "import kafka_replay.pytest_plugin, sys; print('pyspark' in sys.modules)"


def make_project(root: Path) -> Path:
    """A project of one test and an empty conftest, nothing else."""
    (root / "test_one.py").write_text("def test_one():\n    pass\n")
    (root / "conftest.py").write_text("")
    return root


def _environment() -> dict[str, str]:
    """This environment, less what would change pytest's options or plugins."""
    drop = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    return {k: v for k, v in os.environ.items() if k not in drop}


def time_collection(project: Path, extra: tuple[str, ...] = ()) -> float:
    """Wall seconds of one ``pytest --collect-only`` in ``project``; fails unless 1 test."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, *COMMAND, *extra],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0 or "1 test collected" not in result.stdout:
        raise RuntimeError(
            f"pytest --collect-only {' '.join(extra)} failed ({result.returncode}):\n"
            f"{result.stdout}\n{result.stderr}"
        )
    return seconds


def plugin_imports_pyspark(project: Path) -> bool:
    result = subprocess.run(
        [sys.executable, "-c", PYSPARK_CHECK],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return result.stdout.strip() == "True"


def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-collection-") as scratch:
        project = make_project(Path(scratch))
        time_collection(project)  # warm-up: page cache, bytecode
        time_collection(project, WITHOUT_PLUGIN)
        runs: dict[str, list[float]] = {"with the plugin": [], "plugin disabled": []}
        for _ in range(args.runs):
            runs["with the plugin"].append(time_collection(project))
            runs["plugin disabled"].append(time_collection(project, WITHOUT_PLUGIN))
        pyspark = plugin_imports_pyspark(project)
    print(
        f"\npytest --collect-only -q, one test, {args.runs} runs each (after a warm-up run)"
        f"\n  {sys.executable}"
    )
    for label, values in runs.items():
        low, high, median = min(values), max(values), statistics.median(values)
        print(f"  {label:<16} median {median:6.3f}s  (min {low:.3f}, max {high:.3f})")
    with_plugin = statistics.median(runs["with the plugin"])
    without = statistics.median(runs["plugin disabled"])
    print(
        f"  with / without, median: {with_plugin / without:.2f}"
        f" (+{(with_plugin - without) * 1000:.0f} ms)"
    )
    print(f"  importing kafka_replay.pytest_plugin imports pyspark: {'yes' if pyspark else 'no'}")
