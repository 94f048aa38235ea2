"""The GitHub Action: its gate script (``.github/replay-gate.sh``) and what compare adds for it.

The script turns the action's inputs (``REPLAY_*`` variables) into a ``kafka-replay run`` or
``kafka-replay compare`` command; ``REPLAY_DRY_RUN=1`` prints its arguments without running
anything, so most of this is fast. Its gate mode reads a report and prints one GitHub annotation
per failed item. ``compare --junit`` writes one test case per incident, profile and candidate.
The last test runs the script for real from a team's repository against the installed wheel
(the ``team`` fixture of ``test_team_install``), replaying one incident on real Kafka.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from kafka_replay.replay.compare import (
    Change,
    Comparison,
    ItemComparison,
    comparison_json,
    parse_setup,
)
from kafka_replay.report.catalog_report import write_comparison_step_summary
from kafka_replay.report.junit import comparison_junit_xml, write_comparison_junit
from tests.test_team_install import team  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".github" / "replay-gate.sh"
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"
GATE_TIMEOUT_S = 900


def script(*argv: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The gate script with only these REPLAY_* variables (and the others' defaults)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_", "GITHUB_"))}
    return subprocess.run(
        ["bash", str(SCRIPT), *argv], cwd=cwd, env={**clean, **env},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def dry_run(**env: str) -> list[str]:
    """The arguments the script would give ``kafka-replay``."""
    result = script(REPLAY_DRY_RUN="1", REPLAY_REPORT="/tmp/out", **env)
    assert result.returncode == 0, result.stderr
    command, *argv = result.stdout.splitlines()
    assert command.startswith(f"kafka-replay {argv[0]} ")
    return argv


def test_the_inputs_become_run_options() -> None:
    argv = dry_run(
        REPLAY_INCIDENTS="zombie-commit\n  poll-timeout-rebalance *",
        REPLAY_INCIDENT_DIRS="ops/incidents more",
        REPLAY_APP="java -jar app.jar --brokers {bootstrap}",
        REPLAY_APP_IMAGE="team/orders:1",
        REPLAY_BACKEND="tansu:0.6.0",
        REPLAY_EXPECT="ops/expect.toml",
        REPLAY_CLIENT_CONFIG="max.poll.records=500\nsession.timeout.ms=10000",
        REPLAY_BROKER_CONFIG="  group.initial.rebalance.delay.ms=0 ",
        REPLAY_SCALE="3",
        REPLAY_CLIENT_LIBRARY="confluent-kafka==2.6.0",
        REPLAY_ALLOW_NOT_APPLICABLE="true",
        REPLAY_JOBS="2",
    )
    assert argv == [
        "run", "--report", "/tmp/out", "--junit", "/tmp/out/junit.xml",
        "zombie-commit", "poll-timeout-rebalance", "*",
        "--incidents", "ops/incidents", "--incidents", "more",
        "--app", "java -jar app.jar --brokers {bootstrap}", "--app-image", "team/orders:1",
        "--kafka-backend", "tansu:0.6.0", "--expect", "ops/expect.toml",
        "--scale", "3", "--client-library", "confluent-kafka==2.6.0",
        "--client-config", "max.poll.records=500", "--client-config", "session.timeout.ms=10000",
        "--broker-config", "group.initial.rebalance.delay.ms=0",
        "--jobs", "2", "--allow-not-applicable",
    ]  # fmt: skip


def test_empty_inputs_add_nothing_and_all_is_the_catalog() -> None:
    argv = dry_run(REPLAY_INCIDENTS="all", REPLAY_ALLOW_NOT_APPLICABLE="false", REPLAY_SCALE="")
    assert argv == ["run", "--report", "/tmp/out", "--junit", "/tmp/out/junit.xml", "--all"]


def test_a_baseline_and_a_candidate_make_a_comparison() -> None:
    argv = dry_run(
        REPLAY_BASELINE="kafka=4.0.2",
        REPLAY_CANDIDATE="kafka=4.4.0 protocol=consumer",
        REPLAY_INCIDENTS="zombie-commit",
        REPLAY_PROFILE="remediated",
        REPLAY_CLIENT_CONFIG="max.poll.records=5",
    )
    assert argv == [
        "compare", "--report", "/tmp/out", "--junit", "/tmp/out/junit.xml",
        "--baseline", "kafka=4.0.2", "--candidate", "kafka=4.4.0 protocol=consumer",
        "zombie-commit", "--profile", "remediated", "--client-config", "max.poll.records=5",
    ]  # fmt: skip


def test_a_matrix_names_its_own_selection() -> None:
    argv = dry_run(REPLAY_MATRIX="ci/matrix.toml", REPLAY_KAFKA_VERSION="4.0.2")
    assert argv == [
        "compare", "--report", "/tmp/out", "--junit", "/tmp/out/junit.xml",
        "--matrix", "ci/matrix.toml", "--kafka-version", "4.0.2",
    ]  # fmt: skip


def outcome(incident: str, profile: str, **fields: Any) -> dict[str, Any]:
    return {"incident": incident, "profile": profile, "gate": "pass", "error": None,
            "reasons": [], "result": "cured", **fields}  # fmt: skip


def gate(tmp_path: Path, status: str, report: dict[str, Any] | None) -> tuple[int, list[str]]:
    if report is not None:
        (tmp_path / "report.json").write_text(json.dumps(report))
    result = script("gate", STATUS=status, REPLAY_REPORT=str(tmp_path))
    return result.returncode, result.stdout.splitlines()


def test_the_gate_annotates_each_failed_run(tmp_path: Path) -> None:
    report = {"runs": [
        outcome("zombie-commit", "remediated"),
        outcome("zombie-commit", "vulnerable", gate="FAIL", result="vulnerable",
                reasons=["your app is vulnerable: stale_commits = 3", "100% sure,\nreally"]),
        outcome("poll-timeout-rebalance", "remediated", gate="FAIL", error="Traceback\nboom",
                failed_stage="checker", reasons=[]),
        outcome("fenced", "remediated", gate="n/a", reasons=["not on tansu"]),
    ]}  # fmt: skip
    code, lines = gate(tmp_path, "2", report)
    assert code == 1
    errors = [line for line in lines if line.startswith("::error title=kafka-replay: ")]
    assert errors == [
        "::error title=kafka-replay: zombie-commit [vulnerable]::your app is vulnerable: "
        "stale_commits = 3; 100%25 sure,%0Areally",
        "::error title=kafka-replay: poll-timeout-rebalance [remediated]::error in checker: "
        "Traceback",
    ]
    assert "kafka-replay run: 2 of 4 run(s) failed (1 could not be judged)" in lines


def test_a_green_gate_passes_without_annotations(tmp_path: Path) -> None:
    code, lines = gate(tmp_path, "0", {"runs": [outcome("zombie-commit", "remediated")]})
    assert code == 0
    assert not [line for line in lines if line.startswith("::")]
    assert lines[-1] == "kafka-replay: passed"


@pytest.mark.parametrize("status", ["1", "2", ""])
def test_no_report_still_fails_with_one_annotation(tmp_path: Path, status: str) -> None:
    code, lines = gate(tmp_path, status, None)
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("::error title=kafka-replay::")


def synthetic_comparison() -> dict[str, Any]:
    """A comparison of two candidates: one regression, one drift, one not applicable."""

    def side(result: str, passed: bool, **fields: Any) -> dict[str, Any]:
        return {"result": result, "passed": passed, "verdict": "at-least-once",
                "duration_s": 12.5, "run_dir": "/runs/x", **fields}  # fmt: skip

    def item(profile: str, kind: str, *whats: str) -> ItemComparison:
        found = ItemComparison(
            "zombie-commit", profile, side("cured", True), side("vulnerable", False)
        )
        found.changes = [Change(kind, what) for what in whats]
        return found

    regression = item(
        "remediated", "regression", "the incident's signature now appears", "lag 1 -> 9"
    )
    regression.changes[1].kind = "drift"
    comparisons = [
        Comparison(parse_setup("kafka=4.4.0"), "/r/candidate-a", [
            regression, item("vulnerable", "drift", "lag 1 -> 9 (beyond 50%)"),
        ]),
        Comparison(parse_setup("backend=tansu"), "/r/candidate-b", [
            item("remediated", "not applicable", "does not apply to the candidate: no EOS"),
        ]),
    ]  # fmt: skip
    return comparison_json(parse_setup("kafka=4.0.2"), "/r/baseline", comparisons)


def test_compare_junit_has_a_case_per_item_profile_and_candidate(tmp_path: Path) -> None:
    payload = synthetic_comparison()
    path = write_comparison_junit(tmp_path / "out" / "junit.xml", payload)
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "kafka-replay: kafka=4.0.2 against kafka=4.4.0",
        "kafka-replay: kafka=4.0.2 against backend=tansu",
    ]
    cases = root.findall(".//testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("kafka-replay.zombie-commit", "remediated [kafka=4.4.0]"),
        ("kafka-replay.zombie-commit", "vulnerable [kafka=4.4.0]"),
        ("kafka-replay.zombie-commit", "remediated [backend=tansu]"),
    ]
    assert cases[0].get("time") == "12.500"
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "regression: the incident's signature now appears; drift: lag 1 -> 9"
    )
    assert cases[1].find("failure") is None and cases[1].find("skipped") is None
    assert "drift: lag 1 -> 9 (beyond 50%)" in (cases[1].findtext("system-out") or "")
    skipped = cases[2].find("skipped")
    assert skipped is not None and "no EOS" in (skipped.get("message") or "")
    # the same tree as the pure function's
    assert ET.tostring(comparison_junit_xml(payload).getroot()) == ET.tostring(root)


def test_the_gate_annotates_each_regression(tmp_path: Path) -> None:
    code, lines = gate(tmp_path, "1", synthetic_comparison())
    assert code == 1
    assert [line for line in lines if line.startswith("::error title=kafka-replay: ")] == [
        "::error title=kafka-replay: zombie-commit [remediated]::candidate kafka=4.4.0; "
        "regression: the incident's signature now appears; drift: lag 1 -> 9"
    ]
    assert (
        "kafka-replay compare: 1 regression(s) in 3 item(s) of 2 candidate setup(s) against "
        "kafka=4.0.2" in lines
    )


def test_compare_writes_its_table_to_the_job_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert write_comparison_step_summary("| a |\n") is None
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert write_comparison_step_summary("# x against y\n\n| a |\n") == summary
    assert summary.read_text() == "before\n# x against y\n\n| a |\n\n"


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    for path in (ACTION, WORKFLOW):
        for line in path.read_text().splitlines():
            used = re.search(r"uses: (\S+)(.*)$", line)
            if used is None or used.group(1) == "./":
                continue
            assert re.fullmatch(r"actions/[\w/-]+@[0-9a-f]{40}", used.group(1)), line
            assert re.fullmatch(r" # v\d+\.\d+\.\d+", used.group(2)), line


def test_every_input_reaches_a_step() -> None:
    text = ACTION.read_text()
    inputs = re.findall(r"^  ([a-z-]+):\n    description:", text.split("outputs:")[0], re.M)
    assert len(inputs) > 20
    for name in inputs:
        assert f"${{{{ inputs.{name} }}}}" in text, name


def test_the_gate_replays_from_a_teams_repository(
    team: tuple[Path, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    repo, env = team
    out = tmp_path / "out"
    report = tmp_path / "report"
    env = {k: v for k, v in env.items() if not k.startswith(("REPLAY_", "GITHUB_"))}
    env.pop("PYTHONPATH", None)  # the script puts the team's directory first itself
    env.update(
        REPLAY_INCIDENTS="zombie-commit",
        REPLAY_PROFILE="remediated",
        REPLAY_APP="python -m kafka_replay_incidents.apps.periodic_committer "
        "--commit-every-s 1 --work-ms 50 --only-assigned",
        REPLAY_GUARANTEE="at-least-once",
        REPLAY_REPORT=str(report),
        GITHUB_OUTPUT=str(out),
    )
    result = subprocess.run(
        ["bash", str(SCRIPT)], cwd=repo, env=env, capture_output=True, text=True,
        timeout=GATE_TIMEOUT_S,
    )  # fmt: skip
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    assert result.stdout.startswith("kafka-replay run --report "), said
    assert "exit-code=0" in out.read_text().splitlines(), said
    assert f"report-dir={report}" in out.read_text().splitlines()
    assert (report / "junit.xml").is_file() and (report / "report.html").is_file()
    gated = subprocess.run(
        ["bash", str(SCRIPT), "gate"], cwd=repo, env={**env, "STATUS": "0"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "kafka-replay run: 0 of 1 run(s) failed (0 could not be judged)" in gated.stdout


def test_the_sides_of_a_comparison_write_no_job_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_replay.cli_compare import _no_step_summary

    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    with _no_step_summary():
        assert "GITHUB_STEP_SUMMARY" not in os.environ
    assert os.environ["GITHUB_STEP_SUMMARY"] == str(tmp_path / "summary.md")
