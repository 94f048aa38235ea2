"""Stored catalog runs judged again: today's judging gives each the outcome it had when it was
played, measured anew from its history and its recorded checks (no cluster, no Spark).

``tests/data/runs/<run>`` holds runs as ``./dev main`` wrote them in a fresh clone's report
directory (``replay-report/runs``), without their broker logs and client properties, which
judging does not read. They cover the kinds of run judging treats apart: an output alone, a
dead-letter topic beside it, a pipeline's hops, a share group, retention and idle periods. The
checks themselves are analysed again by ``tests/test_checker_recorded.py``.

What judging writes (:data:`~kafka_replay.judging.rejudge.JUDGED`, and the judgement's reasons)
is measured again; everything else of ``outcome.json``, its timing fields (``duration_s``,
``stage_s``) included, is the run's own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kafka_replay.definitions.catalog import catalog_dir, load_incidents
from kafka_replay.definitions.model import Incident
from kafka_replay.judging.rejudge import JUDGED, rejudge

RUNS = Path(__file__).parent / "data" / "runs"


@pytest.fixture(scope="module")
def catalog() -> dict[str, Incident]:
    return load_incidents((catalog_dir(),))


def _stored(run: Path) -> dict:
    return json.loads((run / "outcome.json").read_text())


@pytest.mark.parametrize("run", sorted(RUNS.iterdir()), ids=lambda path: path.name)
def test_a_stored_run_judged_again_gets_the_outcome_it_had(
    run: Path, catalog: dict[str, Incident]
) -> None:
    stored = _stored(run)
    again = rejudge(run, catalog[stored["incident"]]).to_json()
    assert {k: again[k] for k in JUDGED} == {k: stored[k] for k in JUDGED}
    assert again == stored


def test_the_stored_runs_reach_every_kind_of_place() -> None:
    """Runs judged on one place, on a dead-letter topic beside the output, on a pipeline's
    hops; some reproduced, some cured."""
    runs = sorted(RUNS.iterdir())
    assert any((run / "checks.json").exists() for run in runs)
    assert any((run / "hops.json").exists() for run in runs)
    results = {_stored(run)["result"] for run in runs}
    assert {"reproduced", "cured"} <= results, results


def test_judging_again_reads_the_history(tmp_path: Path, catalog: dict[str, Incident]) -> None:
    """A history without its committed offsets is judged without them: the lag the group
    kept through the quiet period is no longer seen, and the run no longer reproduces."""
    run = tmp_path / "zombie-commit-vulnerable"
    shutil.copytree(RUNS / run.name, run)
    (run / "events" / "offsets.jsonl").write_text("")
    stored = _stored(run)
    again = rejudge(run, catalog["zombie-commit"])
    assert stored["symptoms"]["lag_while_idle"] > 0
    assert again.symptoms["lag_while_idle"] == 0
    assert (stored["gate"], again.gate) == ("pass", "FAIL")
