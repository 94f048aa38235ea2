"""``kafka-replay explore`` end to end on real Kafka: a service written from the contract alone
with a defect (it commits each batch before writing its results) is played once without
faults, the fault aimed at the window that play shows (a commit ahead of its writes) breaks it
five times of five in two lanes, the reference service survives it, the finding is shrunk and
written as a definition, and that definition replays it; bad input is one ``error:`` line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_replay.definitions.definition import load_incident
from tests.test_catalog_cli import kafka_replay

COMMIT_FIRST = f"{sys.executable} -m tests.apps.flawed commit-first"
SEED, RECORDS = 26, 800


def test_a_commit_first_loss_is_found_where_the_service_is_exposed(tmp_path: Path) -> None:
    out = tmp_path / "found"
    explored = subprocess.run(
        kafka_replay(
            "explore", "--app", COMMIT_FIRST, "--guarantee", "at-least-once",
            "--families", "requests", "--seed", str(SEED), "--records", str(RECORDS),
            "--budget", "8m", "--jobs", "2", "--out", str(out),
        ),
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    said = explored.stdout + explored.stderr
    assert explored.returncode == 1, said
    assert "windows of exposure: " in said and "commit ahead of writes x" in said, said
    assert "lost in 5 of 5 plays" in said and "reference: at-least-once held" in said, said
    (written,) = out.glob("*.toml")
    assert re.fullmatch(rf"lost-{SEED}-\d+\.toml", written.name), written.name
    finding = load_incident(written)
    assert [str(c) for c in finding.signature] == ["inputs_lost_in_worst_place >= 1"]
    assert "aimed at commit ahead of writes" in finding.title, finding.title
    (fault,) = [s for s in finding.steps if s.do == "kafka_fault"]
    assert (fault.options["api"], fault.options["action"]) == ("OffsetCommit", "kill_sender")
    report = (out / "explore.md").read_text()
    assert f"## lost: `{written.name}`" in report and "| reference |" in report
    assert "aimed at commit ahead of writes" in report

    replayed = subprocess.run(
        kafka_replay("run", "--incidents", str(out), written.stem, "--profile", "vulnerable"),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "reproduced (vulnerable)" in replayed.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--guarantee", "at-least-once"], "--app or --app-image is required"),
        (["--app-image", "orders=team/orders:1", "--guarantee", "at-least-once"],
         "explore takes one service, given alone"),
        (["--app", "no-such-service --fast", "--guarantee", "at-least-once"],
         "'no-such-service' was not found"),
        (["--app", COMMIT_FIRST], "--guarantee is required"),
        (["--app", COMMIT_FIRST, "--guarantee", "at-least-once", "--families", "disks"],
         "unknown family disks"),
        (["--app", COMMIT_FIRST, "--guarantee", "at-least-once", "--records", "5"],
         "--records must be 100 or more"),
        (["--app", COMMIT_FIRST, "--guarantee", "at-least-once", "--expect",
          str(Path(__file__).parent / "data" / "expect-unknown-dead-letter.toml")],
         "expect-unknown-dead-letter.toml: expect.dead_letter"),
    ],
)  # fmt: skip
def test_bad_input_is_one_error_line(argv: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run(
        kafka_replay("explore", *argv, "--out", str(tmp_path / "out")),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.matrix  # CI: the pipeline's drawn definitions and places, without Kafka
def test_a_pipelines_service_is_explored_in_its_place(tmp_path: Path) -> None:
    """A service that buffers results while its consumer commits, in the first place of a
    pipeline: found losing records under a kill of its own instances, the reference in the
    same place surviving the schedule, and the finding replayed with the pipeline."""
    out = tmp_path / "found"
    expect = Path(__file__).parent.parent / "docs" / "examples" / "explore-pipeline.toml"
    explored = subprocess.run(
        kafka_replay(
            "explore", "--expect", str(expect), "--app", f"enrich={sys.executable} -m "
            "tests.apps.flawed buffering", "--guarantee", "at-least-once", "--families", "app",
            "--seed", "4", "--budget", "8m", "--jobs", "2", "--out", str(out),
        ),
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    said = explored.stdout + explored.stderr
    assert explored.returncode == 1 and "as service enrich of its pipeline" in said, said
    (written,) = out.glob("lost-*.toml")
    finding = load_incident(written)
    (killed,) = [step for step in finding.steps if step.do == "kill_at_random"]
    assert killed.options["app"] == "enrich"
    assert finding.profiles["remediated"].apps["enrich"].command.endswith("batch_forwarder")
    replayed = subprocess.run(
        kafka_replay("run", "--incidents", str(out), written.stem, "--profile", "vulnerable"),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert replayed.returncode == 0 and "reproduced (vulnerable)" in replayed.stdout
