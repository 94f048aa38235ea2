"""Recorded checks of catalog runs, analysed again: a changed checker must find what the
checker found when they were recorded, anomaly by anomaly, place by place, hop by hop.

``tests/data/checks/<run>/<n>`` holds one check's inputs and findings, written by a catalog
run with ``KAFKA_REPLAY_RECORD_CHECKS`` set (docs/checker.md says how to record them again).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.checker import check_run
from kafka_replay.checker.recorded_checks import RECORD_ENV, analyse_recorded, recorded_findings
from kafka_replay.checker.warm_up import made_up_run

RECORDED = Path(__file__).parent / "data" / "checks"
CHECKS = sorted(path.parent for path in RECORDED.glob("*/*/check.json"))


def test_checks_are_recorded() -> None:
    """The catalog's recorded checks are here, and some found something to compare."""
    assert len({check.parent for check in CHECKS}) >= 10
    found = set()
    for check in CHECKS:
        findings = recorded_findings(check)
        found |= {name for name, finding in findings.items() if finding["count"]}
    assert len(found) >= 8, found


@pytest.mark.parametrize("check", CHECKS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_recorded_check_finds_what_it_found(spark: SparkSession, check: Path) -> None:
    recorded = recorded_findings(check)
    found = analyse_recorded(spark, check)
    assert set(recorded) <= set(found)
    newer = set(found) - set(recorded)  # anomalies added since it was recorded find nothing
    assert all(not found[name]["count"] for name in newer), newer
    for name, finding in recorded.items():
        assert found[name] == finding, name


def test_a_check_records_what_it_read_and_found(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "kept"))
    run = tmp_path / "run"
    result = check_run(spark, run, made_up_run(run), "exactly-once")
    (check,) = (tmp_path / "kept" / "run").iterdir()
    assert {path.name for path in check.iterdir()} >= {"check.json", "acks.jsonl.gz"}
    again = analyse_recorded(spark, check)
    assert {name: finding["count"] for name, finding in again.items()} == result.counts
    assert again["duplicate"]["count"] == 1 and again["unexpected"]["count"] == 1
