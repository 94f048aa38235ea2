"""``kafka-replay compare`` end to end: two setups replayed on real Kafka, then compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

COMPARE_TIMEOUT_S = 900


def compare(
    tmp_path: Path, incident: str, baseline: str, candidate: str
) -> tuple[subprocess.CompletedProcess[str], dict, dict]:
    """Compare the remediated profile of ``incident`` on two setups: the result, the
    comparison's report.json, and its one item."""
    report = tmp_path / "compare"
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "compare", incident, "--profile", "remediated",
         "--baseline", baseline, "--candidate", candidate, "--report", str(report)],
        capture_output=True, text=True, timeout=COMPARE_TIMEOUT_S,
    )  # fmt: skip
    found = report / "report.json"
    assert found.exists(), result.stdout + result.stderr
    payload = json.loads(found.read_text())
    ((item,),) = [c["items"] for c in payload["candidates"]]
    return result, payload, item


@pytest.mark.matrix  # CI's real compare is the regression below
def test_a_broker_and_a_client_release_side_by_side(tmp_path: Path) -> None:
    import confluent_kafka

    result, payload, item = compare(
        tmp_path, "zombie-commit", "kafka=4.4.0", "kafka=3.9.2 client=confluent-kafka==2.6.0"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (candidate,) = payload["candidates"]
    sides = {
        side: json.loads((Path(where["report_dir"]) / "report.json").read_text())
        for side, where in (("baseline", payload["baseline"]), ("candidate", candidate))
    }
    clients = {"baseline": confluent_kafka.__version__, "candidate": "2.6.0"}
    for side, version in (("baseline", "4.4.0"), ("candidate", "3.9.2")):
        assert sides[side]["kafka_version"] == version
        logs = Path(item[side]["run_dir"]) / "logs"
        assert f"Kafka version: {version} " in (logs / "broker-1.log").read_text()  # it ran
        assert f"confluent-kafka {clients[side]} " in (logs / "app-0.log").read_text()
    # both sides checked on the one Spark Connect server started for the comparison
    servers = {
        json.loads((Path(item[side]["run_dir"]) / "run.json").read_text())["checked_on"]
        for side in ("baseline", "candidate")
    }
    assert len(servers) == 1 and servers.pop().startswith("sc://127.0.0.1:"), servers
    assert (item["incident"], item["profile"]) == ("zombie-commit", "remediated")
    assert item["kind"] in ("same", "drift"), item["changes"]
    assert item["baseline"]["result"] == item["candidate"]["result"] == "cured"
    assert payload["regressions"] == 0


def test_a_candidate_that_brings_back_the_posts_setting_is_a_regression(tmp_path: Path) -> None:
    result, _, item = compare(tmp_path, "poll-timeout-rebalance", "", "client.max.poll.records=500")
    assert result.returncode == 1, result.stdout + result.stderr
    assert item["kind"] == "regression"
    assert item["baseline"]["result"] == "cured"
    assert item["candidate"]["reproduced"] is True
    regressions = [c["what"] for c in item["changes"] if c["kind"] == "regression"]
    assert "the incident's signature now appears" in regressions
    assert "regression: poll-timeout-rebalance [remediated]" in result.stdout
    candidate_meta = Path(item["candidate"]["run_dir"]) / "run.json"
    assert json.loads(candidate_meta.read_text())["client_config"]["max.poll.records"] == 500


def test_a_bad_setup_is_refused_before_anything_starts(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "compare", "zombie-commit",
         "--baseline", "kafka=4.4.0", "--candidate", "protocol=kip848",
         "--report", str(tmp_path / "compare")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "protocol is one of classic, consumer" in result.stderr
    assert not (tmp_path / "compare").exists()


def pytest_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
         "--pyargs", "kafka_replay_incidents", *args],
        cwd=cwd, capture_output=True, text=True, timeout=COMPARE_TIMEOUT_S,
    )  # fmt: skip


def test_setups_multiply_the_catalog_items_and_name_them(tmp_path: Path) -> None:
    result = pytest_in(
        tmp_path, "--collect-only", "-q", "--replay-setup", "kafka=3.9.2",
        "--replay-setup", "kafka=4.4.0 protocol=consumer", "-k", "incident and 3.9.2",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    ids = [line for line in result.stdout.splitlines() if "::incident[" in line]
    assert len(ids) > 0 and all(line.endswith("-kafka=3.9.2]") for line in ids)
    assert any(line.endswith("::incident[zombie-commit-remediated-kafka=3.9.2]") for line in ids)
    assert f"{len(ids)}/{2 * len(ids)} tests collected" in result.stdout


@pytest.mark.matrix  # CI: setups name the items (above); a setup reaches compare's runs
def test_a_setup_reaches_the_run_of_an_item(tmp_path: Path) -> None:
    result = pytest_in(
        tmp_path, "-v", "--replay-setup", "client.max.poll.records=500",
        "-k", "poll-timeout-rebalance-remediated",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    name = "incident[poll-timeout-rebalance-remediated-client.max.poll.records=500]"
    assert f"{name} FAILED" in result.stdout
    assert "reproduced: True" in result.stdout  # the post's failure, under its fix
