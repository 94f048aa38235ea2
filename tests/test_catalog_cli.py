"""``kafka-replay run`` end to end: the user's app under an incident, the report, Ctrl-C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from junitparser import Error, Failure, JUnitXml

from kafka_replay.checker.spark import spark_named
from kafka_replay.waiting import wait_for
from tests.test_bad_input import ctrl_c_when

REPORT_FIELDS = {
    "incident", "profile", "app", "guarantee", "verdict", "passed", "reproduced", "anomalies",
    "symptoms", "duration_s",
}  # fmt: skip


def kafka_replay(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_replay.cli", *args]


def test_your_app_is_gated_on_its_declared_guarantee(tmp_path: Path) -> None:
    app = f"{sys.executable} -m tests.apps.faulty duplicate"  # writes every fifth result twice
    result = subprocess.run(
        kafka_replay(
            "run",
            "poll-timeout-rebalance",
            "--profile",
            "remediated",
            "--app",
            app,
            "--guarantee",
            "exactly-once",
            "--report",
            str(tmp_path / "report"),
            "--junit",
            str(tmp_path / "junit.xml"),
        ),
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL poll-timeout-rebalance [remediated]: the declared exactly-once" in result.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert "| poll-timeout-rebalance | remediated | guarantee broken | at-least-once |" in summary
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    (case,) = suite
    assert (suite.tests, suite.failures, suite.errors) == (1, 1, 0)
    assert (case.classname, case.name) == ("kafka-replay.poll-timeout-rebalance", "remediated")
    (failure,) = case.result
    assert isinstance(failure, Failure) and "240 inputs delivered twice" in failure.message
    assert "symptoms: " in failure.text  # the key symptoms come with it
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    (run,) = report["runs"]
    assert set(run) >= REPORT_FIELDS
    assert (run["incident"], run["profile"], run["app"]) == (
        "poll-timeout-rebalance",
        "remediated",
        "tests.apps.faulty",
    )
    assert (run["guarantee"], run["verdict"], run["passed"]) == (
        "exactly-once",
        "at-least-once",
        False,
    )
    assert run["anomalies"]["duplicate"] == 240  # 1,200 inputs, every fifth written twice
    assert run["anomalies"]["lost"] == 0
    assert (
        "the declared exactly-once guarantee broke: at-least-once (240 inputs delivered twice)"
        in (" ".join(run["reasons"]))
    )
    assert run["result"] == "guarantee broken"
    assert (tmp_path / "report" / "report.md").exists()
    assert Path(run["run_dir"], "events", "produce.jsonl").exists()


def test_an_app_that_cannot_start_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    app = f"{sys.executable} -c 'import sys; print(\"no config\"); sys.exit(3)'"
    result = subprocess.run(
        kafka_replay(
            "run", "zombie-commit", "--profile", "remediated", "--app", app,
            "--report", str(tmp_path / "report"), "--junit", str(tmp_path / "junit.xml"),
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "exited with code 3" in result.stderr
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    ((error,),) = (case.result for case in suite)  # an error, not a failure
    assert isinstance(error, Error) and error.message.startswith("error in steps: ")
    assert "no config" in result.stderr  # its last output comes with the error
    (run,) = json.loads((tmp_path / "report" / "report.json").read_text())["runs"]
    assert (run["failed_stage"], run["result"], run["passed"]) == ("steps", "steps failed", False)
    assert "exited with code 3" in run["error"]


def test_a_checker_that_fails_still_leaves_the_run_in_the_report(tmp_path: Path) -> None:
    result = subprocess.run(
        kafka_replay(
            "run", "poll-timeout-rebalance", "--profile", "remediated",
            "--output-id", "tests.apps.ids:broken", "--report", str(tmp_path / "report"),
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "error in checker" in result.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    (run,) = report["runs"]
    assert (run["failed_stage"], run["result"], run["passed"]) == (
        "checker", "checker failed", False,
    )  # fmt: skip
    assert "tests.apps.ids:broken" in run["error"] and "invoice_id" in run["error"]
    assert run["reasons"] == ["the run could not be judged: its checker failed"]
    history = Path(run["run_dir"])
    assert (history / "events" / "produce.jsonl").stat().st_size > 0  # the history is kept
    assert json.loads((history / "outcome.json").read_text())["failed_stage"] == "checker"
    assert "checker failed" in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.parametrize(
    "names",
    [["offset-retention-expiry"], ["offset-retention-expiry", "zombie-commit", "--jobs", "2"]],
    ids=["one-run", "side-by-side"],
)
def test_ctrl_c_in_a_run_leaves_nothing_behind(tmp_path: Path, names: list[str]) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    child = subprocess.Popen(
        kafka_replay("run", *names, "--profile", "vulnerable"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    descendants, output = ctrl_c_when(child, lambda: _wait_for_the_app(child))
    assert child.returncode == 130, output
    assert "Interrupted" in output
    _, still = psutil.wait_procs(descendants, timeout=15)  # a child may still be exiting
    alive = [_command(p) or f"pid {p.pid}" for p in still if _alive(p)]
    assert not alive, f"left running: {alive}"
    assert not list(scratch.iterdir()), "temporary directories were left behind"


def _wait_for_the_app(child: subprocess.Popen[str]) -> list[psutil.Process]:
    """The run's process tree once the reference app runs in it."""

    def app_started() -> list[psutil.Process] | None:
        descendants = _descendants(child.pid)
        if any("kafka_replay_incidents.apps" in _command(p) for p in descendants):
            return descendants
        assert child.poll() is None, child.stdout.read() if child.stdout else ""
        return None

    message = "the reference app never started"
    return wait_for(app_started, 180, message, every_s=0.2, error=AssertionError)


def _command(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # gone, or a zombie waiting for its parent
        return ""


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_runs_side_by_side_report_like_one_after_the_other(tmp_path: Path) -> None:
    result = subprocess.run(
        kafka_replay(
            "run", "zombie-commit", "deal-flood", "--profile", "remediated", "--jobs", "2",
            "--report", str(tmp_path / "report"),
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    runs = {(run["incident"], run["result"]): Path(run["run_dir"]) for run in report["runs"]}
    assert set(runs) == {("zombie-commit", "cured"), ("deal-flood", "cured")}
    for run_dir in runs.values():  # every history lands in the one report directory
        assert run_dir.parent == tmp_path / "report" / "runs"
        assert (run_dir / "events" / "produce.jsonl").stat().st_size > 0
    assert "2 runs in " in result.stdout and "(--jobs 2)" in result.stdout
    if not spark_named():  # each lane checks on a driver of its own (faster than one shared)
        assert [json.loads((d / "run.json").read_text())["checked_on"] for d in runs.values()] == [
            "local[2]"
        ] * 2


def test_a_process_that_ends_without_a_report_is_named(tmp_path: Path) -> None:
    from kafka_replay.playing.parallel import WorkerFailed, run_side_by_side

    with pytest.raises(
        WorkerFailed, match=r"replaying no-such-incident \(vulnerable\) exited with code 2"
    ):
        run_side_by_side(["no-such-incident", "nor-this-one"], [], ["vulnerable"], 2, tmp_path)


def test_the_longest_runs_start_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_replay.playing.parallel import longest_first, remember_durations
    from kafka_replay.report.outcome import Outcome

    monkeypatch.setenv("KAFKA_REPLAY_CACHE", str(tmp_path))
    runs = [("short", "vulnerable"), ("long", "vulnerable"), ("long", "remediated"),
            ("new", "vulnerable")]  # fmt: skip
    assert longest_first(runs) == runs  # nothing known: the order given

    def ran(incident: str, profile: str, seconds: float) -> Outcome:
        return Outcome(incident, profile, "app", "at-least-once", "exactly-once", True, False,
                       {}, {}, seconds, str(tmp_path))  # fmt: skip

    remember_durations([ran("short", "vulnerable", 30), ran("long", "vulnerable", 20),
                        ran("long", "remediated", 40)])  # fmt: skip
    assert longest_first(runs) == [("long", "remediated"), ("short", "vulnerable"),
                                   ("long", "vulnerable"), ("new", "vulnerable")]  # fmt: skip


#: Refused by ``run`` before anything starts: no value, an empty one, a key the harness sets.
BAD_BROKER_SETTINGS = ["log.retention.ms", "log.retention.ms=", "node.id=3"]


@pytest.mark.parametrize("setting", BAD_BROKER_SETTINGS)
def test_up_refuses_a_broker_setting_as_run_does(
    setting: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kafka_replay import cli

    monkeypatch.setattr(cli, "make_cluster", lambda *args: pytest.fail("a cluster was made"))
    said: dict[str, str] = {}
    for command in (["up"], ["run", "zombie-commit"]):
        assert cli.main([*command, "--broker-config", setting]) == 2
        said[command[0]] = " ".join(capsys.readouterr().err.split())  # one line, however wide
    assert said["up"].startswith("error: ") and said["up"] == said["run"]


def test_up_types_its_broker_settings_as_run_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_replay import cli

    made: list[tuple[object, ...]] = []
    monkeypatch.setattr(cli, "make_cluster", lambda *args: made.append(args))
    argv = ["up", "--broker-config", "log.retention.ms=1000", "--broker-config",
            "auto.create.topics.enable=false", "--kafka-version", "3.9.2",
            "--brokers", "3"]  # fmt: skip
    cli._cluster_from(cli.build_parser().parse_args(argv))
    ((_, version, brokers, overrides, _),) = made
    assert (version, brokers) == ("3.9.2", 3)
    assert overrides == {"log.retention.ms": 1000, "auto.create.topics.enable": False}


@pytest.mark.parametrize(
    ("command", "names"),
    [
        (["up"], ("kafka_version", "kafka_backend", "broker_config")),
        (["image", "build"], ("kafka_version",)),
        (["check"], ("guarantee", "kafka_bootstrap", "output_id", "spark_master")),
    ],
    ids=["up", "image-build", "check"],
)
def test_a_command_offers_the_run_options_it_takes_with_their_help(
    command: list[str], names: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    from kafka_replay.cli import main
    from kafka_replay.replay.settings import OPTIONS

    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())  # as one line, however wide
    for name in names:
        option = OPTIONS[name]
        text = option.help() if callable(option.help) else option.help
        assert f"{option.flag} " in shown and " ".join(text.split()) in shown, name


def test_check_declares_at_least_once_unless_told() -> None:
    from kafka_replay.cli import build_parser

    assert build_parser().parse_args(["check", "run"]).guarantee == "at-least-once"
    given = build_parser().parse_args(["check", "run", "--guarantee", "exactly-once"])
    assert given.guarantee == "exactly-once"
