"""``kafka-replay compare``: the same incidents on two setups, and what changed between them.

Each side is replayed by ``kafka-replay run`` in its own process (one setup's brokers, Kafka
release and settings never leak into the other's), one after the other so they do not compete
for the machine; their reports are kept under ``--report`` and compared by
:mod:`kafka_replay.replay.compare`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from kafka_replay.console import make_console
from kafka_replay.history.store import read_stream
from kafka_replay.replay.settings import COMPARE, RunSettings, add_path_option, add_to_parser

POLL_S = 0.5
KIND_STYLES = {
    "regression": "red",
    "improvement": "green",
    "drift": "yellow",
    "same": "dim",
    "not applicable": "dim",
}

console = make_console(stderr=True)


def add_compare_command(commands: Any) -> None:
    compare = commands.add_parser(
        "compare",
        help="replay incidents on two setups (Kafka release, group protocol, settings, cluster) "
        "and say what changed",
    )
    compare.add_argument("names", nargs="*", metavar="INCIDENT", help="names from `list`")
    compare.add_argument("--all", action="store_true", help="every incident (see `list`)")
    for side, example in (("baseline", "kafka=4.0.2"), ("candidate", "kafka=4.4.0")):
        compare.add_argument(
            f"--{side}",
            default=None,
            metavar="SETUP",
            help=f"KEY=VALUE items separated by spaces or commas, e.g. '{example}'; keys: "
            "kafka, protocol, backend, bootstrap, client.SETTING, broker.SETTING",
        )
    add_path_option(
        compare,
        "--matrix",
        "FILE",
        "a TOML file: baseline, [axes] whose every combination is a candidate, and "
        "optionally incidents and profile (instead of --baseline and --candidate)",
    )
    add_to_parser(compare, COMPARE)
    add_path_option(
        compare,
        "--report",
        "DIR",
        "where both sides' reports and the comparison go (default: ./compare-report)",
        default=Path("compare-report"),
    )
    add_path_option(
        compare,
        "--junit",
        "FILE",
        "write a JUnit XML file: one test case per incident, profile and candidate (a "
        "regression is a failure)",
    )
    compare.set_defaults(run=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from kafka_replay.definitions.catalog import incident_directories, load_incidents, select
    from kafka_replay.replay.compare import (
        Comparison,
        comparison_json,
        comparison_markdown,
        write_comparison,
    )
    from kafka_replay.replay.preflight import check_before_starting
    from kafka_replay.report.catalog_report import write_comparison_step_summary
    from kafka_replay.report.junit import write_comparison_junit

    matrix = _matrix(args)
    names = list(args.names) or list(matrix.incidents)
    if args.matrix is not None and not names:
        args.all = True  # a matrix that names no incidents covers them all
    if bool(args.all) == bool(names):
        raise ValueError("name the incidents to compare, or give --all (see `kafka-replay list`)")
    try:
        incidents = select(load_incidents(tuple(incident_directories(args.incidents))), names)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from exc
    settings = RunSettings.from_args(args, COMPARE)
    if settings.shard:
        incidents = _shard(settings, incidents, args.profile or matrix.profile)
        names = [incident.name for incident in incidents]
    # before either side starts; each side fetches its own Kafka release
    check_before_starting(settings, settings.run_options(), incidents, kafka=False)
    shared = _run_options(settings, names, args.profile or matrix.profile)
    started = time.monotonic()
    drift = {incident.name: incident.drift for incident in incidents}
    if incidents:
        comparisons, reports, side_s = _replay_sides(args, matrix, shared, drift)
    else:  # a shard no incident fell to: an empty comparison, which passes
        comparisons = [
            Comparison(setup, str(args.report / _side(matrix, setup)), [])
            for setup in matrix.candidates
        ]
        reports, side_s = [], [0.0] * (1 + len(matrix.candidates))
    payload = comparison_json(matrix.baseline, str(args.report / "baseline"), comparisons)
    payload["wall_s"] = round(time.monotonic() - started, 1)
    payload["baseline"]["wall_s"] = round(side_s[0], 1)
    for candidate, seconds in zip(payload["candidates"], side_s[1:], strict=True):
        candidate["wall_s"] = round(seconds, 1)
    payload["runs_s"] = round(sum(r["duration_s"] for rep in reports for r in rep["runs"]), 1)
    markdown = comparison_markdown(matrix.baseline, comparisons)
    write_comparison(args.report, payload, markdown)
    write_comparison_step_summary(markdown)
    for comparison in comparisons:
        _print_comparison(comparison.items, matrix.baseline.text, comparison.setup.text)
    console.print(
        f"{len(reports)} setups in {payload['wall_s']:.0f} s wall time; their runs took "
        f"{payload['runs_s']:.0f} s in all"
    )
    console.print(f"Comparison: {args.report / 'report.md'} (and report.json)")
    if args.junit is not None:
        console.print(f"JUnit: {write_comparison_junit(args.junit, payload)}")
    return 1 if payload["regressions"] else 0


def _replay_sides(
    args: argparse.Namespace, matrix: Any, shared: list[str], drift: dict[str, Any]
) -> tuple[list[Any], list[dict[str, Any]], list[float]]:
    """The baseline, then each candidate, replayed and compared: the comparisons, every side's
    report and seconds."""
    from kafka_replay.replay.compare import Comparison, compare_reports

    started = time.monotonic()
    with _one_spark(args, args.report) as spark_ready:
        console.rule(escape(f"baseline: {matrix.baseline.text}"))
        baseline = _replay(
            "baseline", [*shared, *matrix.baseline.options], args.report / "baseline"
        )
        side_s = [time.monotonic() - started]
        comparisons, reports = [], [baseline]
        for setup in matrix.candidates:
            spark_ready()
            side = _side(matrix, setup)
            console.rule(escape(f"{side}: {setup.text}"))
            side_started = time.monotonic()
            report = _replay(side, [*shared, *setup.options], args.report / side)
            side_s.append(time.monotonic() - side_started)
            reports.append(report)
            items = compare_reports(baseline, report, drift)
            comparisons.append(Comparison(setup, str(args.report / side), items))
    return comparisons, reports, side_s


def _side(matrix: Any, setup: Any) -> str:
    """A candidate's directory under ``--report``: ``candidate``, or one per setup of a matrix."""
    return "candidate" if len(matrix.candidates) == 1 else f"candidate-{setup.label}"


def _shard(settings: RunSettings, incidents: list[Any], profile: str | None) -> list[Any]:
    """The incidents of ``--shard K/N`` (each with both sides), said with how many in all."""
    from kafka_replay.definitions.model import PROFILES
    from kafka_replay.playing.shards import known_durations, pick, run_key

    profiles = [profile] if profile else list(PROFILES)
    units = {i.name: [run_key(i.name, p) for p in profiles] for i in incidents}
    mine = set(pick(settings.shard, units, known_durations(settings.shard_times)))
    said = f"shard {settings.shard}: {len(mine)} of the {len(units)} incidents"
    console.print(escape(said + ("" if mine else " (none falls to this shard)")), highlight=False)
    return [incident for incident in incidents if incident.name in mine]


def _matrix(args: argparse.Namespace) -> Any:
    """The setups to replay: ``--matrix FILE``, or ``--baseline`` and ``--candidate``."""
    from kafka_replay.replay.compare import Matrix, load_matrix, parse_setup

    given = args.baseline is not None or args.candidate is not None
    if args.matrix is not None:
        if given:
            raise ValueError("give --matrix FILE, or --baseline and --candidate: not both")
        return load_matrix(args.matrix)
    if args.baseline is None or args.candidate is None:
        raise ValueError("give --baseline SETUP and --candidate SETUP, or --matrix FILE")
    return Matrix(parse_setup(args.baseline), (parse_setup(args.candidate),))


def _run_options(settings: RunSettings, names: list[str], profile: str | None) -> list[str]:
    """The ``kafka-replay run`` options every side shares: the incidents and the settings."""
    os.environ.update(settings.child_environment())  # each side inherits it
    return [*(names or ["--all"]), *settings.replace(profile=profile).argv()]


@contextlib.contextmanager
def _one_spark(args: argparse.Namespace, report_dir: Path) -> Iterator[Callable[[], None]]:
    """Both sides' checks on one Spark Connect server (their processes inherit its URL): the
    candidate finds it warm instead of starting a driver of its own. Not with ``--jobs N``
    (lanes check faster on a driver each, see docs/benchmarks.md) or a Spark named. Launched as
    the baseline starts; what it yields raises, naming the server's log, if it never came up."""
    from kafka_replay.checker.connect_server import SparkConnectServer
    from kafka_replay.checker.spark import REMOTE_ENV, spark_named
    from kafka_replay.servers.reaper import Lease
    from kafka_replay.servers.server_errors import ServerError

    if args.jobs > 1 or spark_named(args.spark_master):
        yield lambda: None
        return

    def ready() -> None:
        try:
            server.wait_ready()
        except ServerError as exc:
            raise ValueError(f"the shared Spark server: {exc}") from None

    lease = Lease.take()
    server = SparkConnectServer(report_dir / "spark-connect.log", lease)
    try:
        os.environ[REMOTE_ENV] = server.launch()
        yield ready
    finally:
        os.environ.pop(REMOTE_ENV, None)
        server.stop()
        lease.release()


def _replay(side: str, options: list[str], report_dir: Path) -> dict[str, Any]:
    """Run ``kafka-replay run`` for one side, showing its progress; its ``report.json``."""
    from kafka_replay.playing.parallel import Worker, WorkerFailed
    from kafka_replay.servers.reaper import Lease

    events = report_dir.parent / f"{side}.events.jsonl"
    argv = [sys.executable, "-m", "kafka_replay.cli", "run", *options, "--events", str(events)]
    log_path = report_dir.parent / f"{side}.log"
    report_dir.parent.mkdir(parents=True, exist_ok=True)
    (report_dir / "report.json").unlink(missing_ok=True)  # never compare a stale report
    events.unlink(missing_ok=True)
    worker = Worker(f"the {side}", argv, report_dir, log_path)
    lease = Lease.take()
    try:
        with _no_step_summary():  # the comparison's table is the job summary, not each side's
            worker.start(lease)
        _follow(worker, side, events)
    finally:
        worker.stop()
        lease.release()
    report = report_dir / "report.json"
    if not report.exists():
        try:
            worker.outcomes()  # raises, naming the exit and the last output
        except WorkerFailed as exc:
            raise ValueError(str(exc)) from None
    if worker.process is not None and worker.process.returncode == 2:
        console.print(f"[yellow]{side}: some runs could not be judged (see {log_path})")
    return json.loads(report.read_text())


@contextlib.contextmanager
def _no_step_summary() -> Iterator[None]:
    """No ``$GITHUB_STEP_SUMMARY`` for the processes started inside."""
    target = os.environ.pop("GITHUB_STEP_SUMMARY", None)
    try:
        yield
    finally:
        if target is not None:
            os.environ["GITHUB_STEP_SUMMARY"] = target


def _follow(worker: Any, side: str, events: Path) -> None:
    """Show the side's progress until it ends: its steps, outcomes and errors, as its run
    reports them in ``events``; its whole output is in ``<side>.log`` beside the reports."""
    console.print(escape(f"{side}: replaying (its output: {worker.log_path})"), highlight=False)
    seen = 0
    with console.status(f"{side}: starting") as status:
        while True:
            done = worker.process.poll() is not None
            told = read_stream(events)
            for event in told[seen:]:
                line = escape(f"{side}: {event['text']}")
                if event["kind"] != "progress" or not console.is_terminal:
                    console.print(line, highlight=False)
                else:
                    status.update(line)
            seen = len(told)
            if done:
                return
            time.sleep(POLL_S)


def _print_comparison(items: list[Any], baseline: str, candidate: str) -> None:
    out = make_console(highlight=False, soft_wrap=True)  # a log's table: as wide as its cells
    table = Table(title=f"{baseline} (baseline) against {candidate} (candidate)")
    for column in ("incident", "profile", "baseline", "candidate", "change"):
        table.add_column(column)
    for item in items:
        style = KIND_STYLES[item.kind]
        table.add_row(
            item.incident,
            item.profile,
            _cell(item.baseline),
            _cell(item.candidate),
            f"[{style}]{item.kind}",
        )
    out.print(table, soft_wrap=False)
    for item in items:
        for change in item.changes:
            out.print(
                f"{change.kind}: {item.incident} [{item.profile}]: {change.what}", markup=False
            )
    regressions = sum(item.kind == "regression" for item in items)
    out.print(f"{regressions} regression(s) in {len(items)} item(s)")


def _cell(run: dict[str, Any] | None) -> str:
    if run is None:
        return "not run"
    return escape(f"{run.get('result', 'not judged')}, {run['verdict']}")
