"""Which items pytest collects here: ``-k incident`` is the catalog, and the suite includes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_replay.replay.catalog import catalog_dir, load_incidents
from kafka_replay.replay.model import PROFILES

ROOT = Path(__file__).resolve().parent.parent


def collected(*argv: str) -> set[str]:
    """The ids ``pytest --collect-only`` lists with ``argv``, run from the repository."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return {line for line in result.stdout.splitlines() if "::" in line}


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
