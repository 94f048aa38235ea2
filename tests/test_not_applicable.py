"""A run that does not apply to its cluster: neither a pass nor a failure, wherever it is shown.

Pure logic on outcomes as the engine makes them; the real runs on Tansu are in test_tansu.py.
"""

from __future__ import annotations

from pathlib import Path

import junitparser

from kafka_replay.history.lag import commits_from_samples
from kafka_replay.replay.compare import compare_reports
from kafka_replay.report.catalog_report import report_json, summary_lines, summary_markdown
from kafka_replay.report.junit import write_junit
from kafka_replay.report.outcome import Outcome

REASON = "not applicable here: it needs broker setting offsets.retention.minutes=1 (essential: x)"


def outcome(applicable: bool = True, passed: bool = True) -> Outcome:
    return Outcome(
        incident="offset-retention-expiry",
        profile="vulnerable",
        app="periodic_committer",
        guarantee="at-least-once",
        verdict="unknown" if not applicable else "at-least-once",
        passed=passed and applicable,
        reproduced=None,
        anomalies={},
        symptoms={},
        duration_s=0.0,
        run_dir="/runs/x",
        result="not applicable" if not applicable else "reproduced",
        reasons=[] if applicable else [REASON],
        applicable=applicable,
    )


def test_the_gate_of_a_run_that_does_not_apply_is_na() -> None:
    assert (outcome().gate, outcome(passed=False).gate, outcome(False).gate) == (
        "pass",
        "FAIL",
        "n/a",
    )
    report = report_json([outcome(), outcome(False)], {})
    assert report["passed"] is True  # nothing failed
    assert [run["gate"] for run in report["runs"]] == ["pass", "n/a"]
    assert report_json([outcome(passed=False)], {})["passed"] is False
    assert f"N/A offset-retention-expiry [vulnerable]: {REASON}" in summary_lines([outcome(False)])
    assert "| n/a |" in summary_markdown([outcome(False)])


def test_junit_skips_it_with_its_reason(tmp_path: Path) -> None:
    path = write_junit(tmp_path / "junit.xml", [outcome(False), outcome(passed=False), outcome()])
    suite = next(iter(junitparser.JUnitXml.fromfile(str(path))))
    assert (suite.tests, suite.skipped, suite.failures, suite.errors) == (3, 1, 1, 0)
    skipped = next(iter(suite)).result[0]
    assert isinstance(skipped, junitparser.Skipped) and skipped.message == REASON


def test_compare_says_a_side_does_not_apply_and_calls_it_no_regression() -> None:
    baseline = outcome().to_json()
    candidate = outcome(False).to_json()
    (item,) = compare_reports({"runs": [baseline]}, {"runs": [candidate]})
    assert item.kind == "not applicable"
    assert item.changes[0].what == f"does not apply to the candidate: {REASON}"


def test_committed_offsets_sampled_from_lag_become_offsets_events() -> None:
    def sample(ts: float, partition: int, committed: int | None) -> dict[str, object]:
        return {"ts": ts, "group": "g", "topic": "in", "partition": partition,
                "committed": committed, "end": 9, "lag": 0}  # fmt: skip

    samples = [sample(1.0, 0, None), sample(1.0, 1, 4), sample(1.5, 0, 5), sample(1.5, 1, 4),
               sample(2.0, 0, 3), sample(2.5, 0, None)]  # fmt: skip
    events = commits_from_samples(samples)
    assert [(e["kind"], e["partition"], e["offset"]) for e in events] == [
        ("commit", 1, 4),
        ("commit", 0, 5),
        ("commit", 0, 3),  # backwards: seen as a regression by the checker
        ("tombstone", 0, None),  # gone: expired or deleted
    ]
    assert [e["log_offset"] for e in events] == [0, 1, 2, 3]
    assert events[1]["commit_ts_ms"] == 1500 and all(e["sampled"] for e in events)


def test_an_outcome_reads_back_from_its_json_whatever_version_wrote_it() -> None:
    written = {**outcome().to_json(), "added_by_a_newer_version": 1}
    assert Outcome.from_json(written) == outcome()
    older = {k: v for k, v in outcome().to_json().items() if k != "not_judged"}
    assert Outcome.from_json(older).not_judged is None
