"""Stored catalog runs judged again: today's judging gives each the outcome, the checks and the
catalog report it had when it was played, measured anew from its history and its recorded
checks (no cluster, no Spark).

``tests/data/runs/<run>`` holds runs as ``./dev main`` wrote them in a fresh clone's report
directory (``replay-report/runs``), without their broker logs and client properties, which
judging does not read; ``tests/data/report.json`` is that report's ``report.json`` for these
runs alone, as the command line's writer (``write_report``) writes it from their outcomes. They
cover the kinds of run judging treats apart: an output alone, a dead-letter topic beside it, a
pipeline's hops, a side-effect topic, a share group (its archived inputs' reason too),
retention and idle periods. The checks themselves are analysed again by
``tests/test_checker_recorded.py``.

What is compared:

- ``outcome.json``, whole: what judging writes (:data:`~kafka_replay.judging.rejudge.JUDGED`,
  and the judgement's reasons) is measured again; the rest, its timing fields (``duration_s``,
  ``stage_s``) included, is the run's own, so nothing of it is excluded.
- ``report.json``, built again from the outcomes judged again: whole but for :data:`TIMING`.
- Each check the judging reads (``check.json``, ``checks.json``, ``hops.json``'s places,
  ``check-side-effects.json``), read and written back: whole, no field excluded (a check
  holds no clock of its writing), so judging is given every field of what was checked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kafka_replay.checker import CheckResult
from kafka_replay.definitions.catalog import catalog_dir, load_incidents
from kafka_replay.definitions.model import Incident
from kafka_replay.history.store import CHECK, HOP_CHECKS, PLACE_CHECKS, SIDE_EFFECTS_CHECK
from kafka_replay.judging.rejudge import JUDGED, rejudge
from kafka_replay.report.catalog_report import write_report

RUNS = Path(__file__).parent / "data" / "runs"
#: The runs' ``report.json`` as it was written, beside them as in a report directory.
REPORT = RUNS.parent / "report.json"

#: The fields of ``report.json`` not compared: the wall clock of its writing, not the runs'.
TIMING = (
    "generated",  # when the report was written: the clock at writing, different every time
)
#: The fields of ``report.json`` the command line gives its writer (where and how the catalog
#: ran, not what its runs showed): given again as they were.
CONTEXT = ("kafka_version", "backend", "runs_kafka", "options", "scale", "settings", "version")


@pytest.fixture(scope="module")
def catalog() -> dict[str, Incident]:
    return load_incidents((catalog_dir(),))


def _stored(run: Path) -> dict:
    return json.loads((run / "outcome.json").read_text())


def _checks(run: Path) -> dict[str, dict[str, Any]]:
    """Every check stored in ``run`` that judging again reads, by the file and place it is in."""
    found: dict[str, dict[str, Any]] = {}
    for name in (CHECK, SIDE_EFFECTS_CHECK):
        if (run / name).exists():
            found[name] = json.loads((run / name).read_text())
    if (run / PLACE_CHECKS).exists():
        places = json.loads((run / PLACE_CHECKS).read_text())
        found |= {f"{PLACE_CHECKS}: {place}": check for place, check in places.items()}
    if (run / HOP_CHECKS).exists():
        hops = json.loads((run / HOP_CHECKS).read_text())
        found |= {
            f"{HOP_CHECKS}: {hop}: {place}": check
            for hop, summary in hops.items()
            for place, check in summary["places"].items()
        }
    return found


@pytest.mark.parametrize("run", sorted(RUNS.iterdir()), ids=lambda path: path.name)
def test_a_stored_run_judged_again_gets_the_outcome_it_had(
    run: Path, catalog: dict[str, Incident]
) -> None:
    stored = _stored(run)
    again = rejudge(run, catalog[stored["incident"]]).to_json()
    assert {k: again[k] for k in JUDGED} == {k: stored[k] for k in JUDGED}
    assert again == stored


@pytest.mark.parametrize("run", sorted(RUNS.iterdir()), ids=lambda path: path.name)
def test_each_check_judging_reads_is_read_whole(run: Path) -> None:
    """A stored check read as judging reads it (``CheckResult.from_json``) and written back
    gives the stored check again: no field of it is left unread."""
    checks = _checks(run)
    assert checks
    for where, stored in checks.items():
        again = json.loads(json.dumps(CheckResult.from_json(stored).to_json(), default=str))
        assert again == stored, where


def test_the_stored_runs_judged_again_give_the_report_they_had(
    tmp_path: Path, catalog: dict[str, Incident]
) -> None:
    """The runs' outcomes judged again, written by the command line's writer in the stored
    report's order with its context, give the stored ``report.json`` but for :data:`TIMING`."""
    stored = json.loads(REPORT.read_text())
    names = [Path(run["run_dir"]).name for run in stored["runs"]]
    assert sorted(names) == [run.name for run in sorted(RUNS.iterdir())]
    outcomes = [
        rejudge(RUNS / name, catalog[run["incident"]])
        for name, run in zip(names, stored["runs"], strict=True)
    ]
    context = {key: stored[key] for key in CONTEXT}
    again = json.loads(write_report(tmp_path, outcomes, context).read_text())
    assert set(TIMING) <= again.keys() & stored.keys()
    compared = again.keys() | stored.keys()
    differ = [key for key in sorted(compared - set(TIMING)) if again.get(key) != stored.get(key)]
    assert not differ, {key: (stored.get(key), again.get(key)) for key in differ}


def test_the_stored_runs_reach_every_kind_of_place() -> None:
    """Runs judged on one place, on a dead-letter topic beside the output, on a pipeline's
    hops, with a side-effect topic; some reproduced, some cured; a share group's with inputs
    its broker archived."""
    runs = sorted(RUNS.iterdir())
    assert any((run / PLACE_CHECKS).exists() for run in runs)
    assert any((run / HOP_CHECKS).exists() for run in runs)
    assert any((run / SIDE_EFFECTS_CHECK).exists() for run in runs)
    results = {_stored(run)["result"] for run in runs}
    assert {"reproduced", "cured"} <= results, results
    assert any(_stored(run)["symptoms"].get("archived_at_limit") for run in runs)


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


def test_judging_writes_the_archived_inputs_reason_from_the_run(
    tmp_path: Path, catalog: dict[str, Incident]
) -> None:
    """The reason a share group's archived inputs get is judging's, written anew from the
    delivery-count limit the run's broker had (``run.json``), not kept from its outcome."""
    run = tmp_path / "share-group-lock-expiry-vulnerable"
    shutil.copytree(RUNS / run.name, run)
    meta = json.loads((run / "run.json").read_text())
    meta["broker_config"]["group.share.delivery.count.limit"] = 7
    (run / "run.json").write_text(json.dumps(meta))
    (stored,) = _stored(run)["reasons"]
    (again,) = rejudge(run, catalog["share-group-lock-expiry"]).reasons
    assert "8 inputs were archived" in stored and "limit = 3" in stored
    assert again == stored.replace("limit = 3", "limit = 7")
