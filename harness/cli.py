"""``kafka-replay``: the command line.

- ``kafka-replay up``: start a cluster, print its bootstrap address, keep it until Ctrl-C.
- ``kafka-replay image build``: build the local Kafka image the container backend runs.
- ``kafka-replay check RUN_DIR``: the Spark checker on one run's history and output.
- ``kafka-replay list``: the incidents (the catalog and ``--incidents DIR``).
- ``kafka-replay run INCIDENT... | --all``: replay incidents and gate on the outcome
  (exit 0 every run passed or did not apply, 1 some run failed, 2 some run could not be
  judged).
- ``kafka-replay report DIR``: write ``report.html`` again from a report directory, or the
  reports of ``run --shard K/N`` merged into it (``--merge``).
- ``kafka-replay capture``: a time window of a real topic to a file, anonymized, for replay.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from rich.markup import escape
from rich.status import Status

from kafka_replay import __version__
from kafka_replay.checker import OUTPUT_FORMATS
from kafka_replay.cli_capture import add_capture_command
from kafka_replay.cli_compare import add_compare_command
from kafka_replay.cli_explore import add_explore_command
from kafka_replay.cli_report import add_report_command
from kafka_replay.cluster import ClusterError, choose_version
from kafka_replay.cluster.backends import (
    backend_class,
    choose_backend,
    make_cluster,
)
from kafka_replay.cluster.images import build_kafka_image
from kafka_replay.cluster.nodes import NodeCluster
from kafka_replay.console import log_handler, make_console, print_exception
from kafka_replay.definitions.model import PROFILES
from kafka_replay.history.store import EventStream
from kafka_replay.interrupts import interrupted, stop_on_signals
from kafka_replay.replay.settings import RUN, RunSettings, add_to_parser
from kafka_replay.servers.server_errors import ServerError

if TYPE_CHECKING:
    from kafka_replay.definitions.model import Incident
    from kafka_replay.report.outcome import Outcome

console = make_console(stderr=True)
#: Clusters a lane of ``--jobs`` keeps: two, the one a run is checked on and the one the next
#: run plays on (a run with another broker config starts its own in about 1.5 s); no more, so
#: idle brokers do not take CPU from the runs beside it.
LANE_CLUSTERS = 2
#: The run options ``up`` takes, as ``run`` takes them (help, types and checks).
CLUSTER_OPTIONS = ("kafka_version", "kafka_backend", "broker_config")
#: The run options ``check`` takes, as ``run`` takes them.
CHECK_OPTIONS = ("guarantee", "kafka_bootstrap", "output_id", "spark_master")


def _interrupt_on_sigterm() -> None:
    """SIGTERM behaves like Ctrl-C, so the ``finally`` blocks stop the brokers in order; and
    either is remembered, so one a C extension swallowed still stops the runs."""
    stop_on_signals()


def _add_cluster_options(parser: argparse.ArgumentParser) -> None:
    add_to_parser(parser, RUN, only=CLUSTER_OPTIONS)
    parser.add_argument("--brokers", type=int, default=1, help="number of KRaft nodes (default 1)")
    parser.add_argument(
        "--log-dir", type=Path, default=None, help="keep broker logs here (default: a temp dir)"
    )


def _cluster_from(args: argparse.Namespace) -> NodeCluster:
    """The cluster ``up`` starts; its settings checked and typed as ``run`` does, before it is
    made (a bad ``--broker-config`` gets ``run``'s refusal)."""
    settings = RunSettings.from_args(args, only=CLUSTER_OPTIONS)
    return make_cluster(
        choose_backend(settings.kafka_backend),
        settings.kafka_version,
        args.brokers,
        settings.run_options().broker,
        args.log_dir,
    )


def cmd_up(args: argparse.Namespace) -> int:
    _interrupt_on_sigterm()
    cluster = _cluster_from(args)
    with console.status(f"Starting Kafka {cluster.version} ({cluster.brokers} broker(s))…"):
        cluster.start()
    try:
        print(cluster.bootstrap_servers, flush=True)
        console.print(
            f"[green]Kafka {cluster.version} is up[/] at [bold]{cluster.bootstrap_servers}"
        )
        console.print(f"Broker logs: {', '.join(cluster.log_files())}")
        console.print("Press Ctrl-C to stop.")
        while True:  # until Ctrl-C or SIGTERM; a dead broker ends it with its log
            time.sleep(1.0)
            cluster.check_alive()
    except KeyboardInterrupt:
        return 0  # Ctrl-C is how `up` is meant to end
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
        with console.status("Stopping Kafka…"):
            cluster.stop()
        console.print("Stopped.")


def cmd_image_build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    tag = build_kafka_image(choose_version(args.kafka_version), progress=console.print)
    console.print(f"[green]{tag}[/] ready ({time.monotonic() - started:.0f}s)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from kafka_replay.apps.correlation import load_extractor
    from kafka_replay.checker import FileOutput, JdbcOutput, KafkaOutput, check_run, spark_session
    from kafka_replay.checker.check import history_bytes
    from kafka_replay.checker.spark import SMALL_HISTORY_BYTES
    from kafka_replay.servers.maven import jdbc_driver_class, maven_jars

    settings = RunSettings.from_args(args, only=CHECK_OPTIONS)  # checked as run checks them
    if args.output_topic:
        if not settings.kafka_bootstrap:
            raise ValueError("--output-topic needs --kafka-bootstrap")
        extractor = load_extractor(settings.output_id) if settings.output_id else None
        output: KafkaOutput | FileOutput | JdbcOutput = KafkaOutput(
            settings.kafka_bootstrap, args.output_topic, extractor
        )
    elif args.output_files:
        output = FileOutput(args.output_files, args.output_format)
    elif args.jdbc_url and args.jdbc_table:
        driver = jdbc_driver_class(maven_jars(args.jdbc_driver))
        output = JdbcOutput(
            args.jdbc_url,
            args.jdbc_table,
            driver,
            args.jdbc_id_column,
            args.jdbc_effect_column,
            time_column=args.jdbc_time_column,
            key_column=args.jdbc_key_column,
        )
    else:
        raise ValueError(
            "give the output: --output-topic (with --kafka-bootstrap), --output-files, "
            "or --jdbc-url with --jdbc-table"
        )
    source = None
    if args.input_topic:
        if not settings.kafka_bootstrap:
            raise ValueError("--input-topic needs --kafka-bootstrap")
        source = KafkaOutput(settings.kafka_bootstrap, args.input_topic)
    small = history_bytes(args.run_dir) <= SMALL_HISTORY_BYTES
    with console.status("Starting Spark…"):
        spark = spark_session(
            settings.spark_master, extra_jars=maven_jars(args.jdbc_driver), small_runs=small
        )
    try:
        with console.status("Checking every record…"):
            result = check_run(spark, args.run_dir, output, settings.guarantee, source=source)
    finally:
        spark.stop()
    report = args.run_dir / "check.json"
    report.write_text(json.dumps(result.to_json(), indent=2, default=str))
    make_console().print(result.summary())
    console.print(f"Report: {report}")
    return {"pass": 0, "fail": 1}.get(result.result, 3)


class _Parser(argparse.ArgumentParser):
    """argparse, whose refusals are one ``error:`` line like every other refusal here."""

    def error(self, message: str) -> NoReturn:
        _error(f"{self.prog}: {message} (see {self.prog} --help)")
        raise SystemExit(2)


def _error(text: str) -> None:
    """One ``error:`` line, never wrapped (a CI log is read by line), also told to a parent."""
    console.print(f"[red]error:[/] {escape(text)}", soft_wrap=True, highlight=False)
    _Events.tell("error", text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafka-replay", description="Replay Kafka incidents against real Kafka.")
    parser.add_argument("--version", action="version", version=f"kafka-replay {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the harness's logs")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start a Kafka cluster and keep it until Ctrl-C")
    _add_cluster_options(up)
    up.set_defaults(run=cmd_up)
    image = commands.add_parser("image", help="images for the container backend")
    image_commands = image.add_subparsers(dest="image_command", required=True)
    build = image_commands.add_parser(
        "build", help="build kafka-replay/kafka:VERSION from Debian packages and Maven Central"
    )
    add_to_parser(build, RUN, only=("kafka_version",))
    build.set_defaults(run=cmd_image_build)
    check = commands.add_parser(
        "check",
        help="what happened to every record of a run (Spark)",
        description="What happened to every record of a run, judged by Spark against "
        "--guarantee (here at-least-once unless given: there is no incident to take it from).",
    )
    check.add_argument("run_dir", type=Path, help="the run's history directory")
    add_to_parser(check, RUN, only=CHECK_OPTIONS)
    check.set_defaults(guarantee="at-least-once")
    check.add_argument("--output-topic", help="the app's output topic")
    check.add_argument(
        "--input-topic",
        help="the input topic, read to find what the brokers lost, duplicated or reordered "
        "(lost_write, log_duplicate, log_reordered), and where its log starts now "
        "(deleted_by_retention)",
    )
    check.add_argument("--output-files", help="output written as files with an event_id column")
    check.add_argument("--output-format", default="json", choices=OUTPUT_FORMATS)
    check.add_argument("--jdbc-url", help="output written to a database: its JDBC URL")
    check.add_argument(
        "--jdbc-table", help="the table (or '(SELECT ...) AS rows') holding the output's rows"
    )
    check.add_argument(
        "--jdbc-id-column", default="event_id", help="the column naming each row's input"
    )
    check.add_argument(
        "--jdbc-effect-column",
        help="a row's effect (an amount, a counter): an input whose rows add up to more than "
        "its first row's value had its effect applied again (effect_repeated)",
    )
    check.add_argument(
        "--jdbc-time-column",
        help="a timestamp column: when each row was written (its output time, out_ts_ms)",
    )
    check.add_argument(
        "--jdbc-key-column",
        help="the column holding each row's Kafka key: the table is a service's state, a row "
        "per key, judged by each key's last input (stale_value, resurrected_key)",
    )
    check.add_argument(
        "--jdbc-driver",
        action="append",
        default=[],
        metavar="GROUP:ARTIFACT:VERSION",
        help="the JDBC driver, from Maven Central (e.g. org.xerial:sqlite-jdbc:3.54.1.0)",
    )
    check.set_defaults(run=cmd_check)
    listing = commands.add_parser("list", help="the incidents: the catalog and your own")
    _add_incidents_option(listing)
    listing.set_defaults(run=cmd_list)
    add_report_command(commands)
    run = commands.add_parser("run", help="replay incidents against real Kafka and check them")
    run.add_argument("names", nargs="*", metavar="INCIDENT", help="names from `list`")
    run.add_argument("--all", action="store_true", help="every incident (see `list`)")
    add_to_parser(run, RUN)
    run.add_argument("--runs-dir", type=Path, default=None, help=argparse.SUPPRESS)
    # what the runs show, as JSON lines, for the process that started this one (compare)
    run.add_argument("--events", type=Path, default=None, help=argparse.SUPPRESS)
    # a lane of --jobs: runs named on stdin, one at a time, sharing brokers and Spark
    run.add_argument("--lane", action="store_true", help=argparse.SUPPRESS)
    run.set_defaults(run=cmd_run)
    add_compare_command(commands)
    add_explore_command(commands)
    add_capture_command(commands)
    return parser


def _add_incidents_option(parser: argparse.ArgumentParser) -> None:
    add_to_parser(parser, RUN, only=("incidents",))


def _incidents(args: argparse.Namespace) -> dict[str, Incident]:
    from kafka_replay.definitions.catalog import incident_directories, load_incidents

    return load_incidents(tuple(incident_directories(args.incidents)))


def cmd_list(args: argparse.Namespace) -> int:
    out = make_console(highlight=False, soft_wrap=True)
    for incident in _incidents(args).values():
        out.print(f"[bold]{incident.name}[/]  ({incident.guarantee}; post {incident.post})")
        out.print(f"  {incident.title}")
        for profile in incident.profiles.values():
            out.print(f"  {profile.name}: {profile.description}")
        out.print("  signature: " + "; ".join(str(c) for c in incident.signature) + "\n")
    return 0


class _Events:
    """What a run shows, also written as JSON lines to ``--events FILE`` for a parent process
    (``compare`` follows its sides this way, not by reading their output)."""

    stream: EventStream | None = None

    @classmethod
    def tell(cls, kind: str, text: str) -> None:
        if cls.stream is not None:
            cls.stream.append({"kind": kind, "text": text})


def _progress(title: str, status: Status) -> Callable[[str], None]:
    """Where a run's steps show: the spinner's text on a terminal, a line each in a log."""

    def show(line: str) -> None:
        _Events.tell("progress", f"{title}: {line}")
        if console.is_terminal:
            status.update(escape(f"{title}: {line}"))
        else:
            console.print(escape(f"{title}: {line}"), highlight=False)

    return show


def cmd_run(args: argparse.Namespace) -> int:
    from kafka_replay.definitions.catalog import select
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.playing.parallel import remember_durations
    from kafka_replay.playing.shards import run_key
    from kafka_replay.replay.preflight import check_before_starting
    from kafka_replay.report.catalog_report import write_report, write_step_summary
    from kafka_replay.report.gate import exit_code
    from kafka_replay.report.junit import write_junit
    from kafka_replay.servers.reaper import leased_temp_dir

    if args.events is not None:
        _Events.stream = EventStream(args.events)
    settings = RunSettings.from_args(args)  # every option checked, naming the bad one
    if bool(args.all) == bool(args.names) and not args.lane:
        raise ValueError("name the incidents to run, or give --all (see `kafka-replay list`)")
    try:
        incidents = select(_incidents(args), args.names)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from exc
    if settings.scale > 1:
        incidents = [load_incident(incident.source, settings.scale) for incident in incidents]
    profiles = [settings.profile] if settings.profile else list(PROFILES)
    every_run = [(incident, profile) for incident in incidents for profile in profiles]
    runs = _shard(settings, every_run) if settings.shard else every_run
    options = settings.run_options()
    check_before_starting(settings, options, incidents, waiting=console.status)
    _interrupt_on_sigterm()
    started = time.monotonic()
    with leased_temp_dir("kafka-replay-") as scratch:
        work_dir = settings.report or scratch
        if args.lane:
            from kafka_replay.definitions.catalog import IncidentsByName, incident_directories

            known = IncidentsByName(
                {i.name: i for i in incidents}, incident_directories(args.incidents)
            )
            _run_lane(settings, known, work_dir, args.runs_dir)
            return 0
        if not runs:
            outcomes = []
        elif settings.jobs > 1 and len({incident.name for incident, _ in runs}) > 1:
            outcomes = _run_side_by_side(settings, runs, work_dir / "runs", scratch)
        else:
            outcomes = _run_in_turn(settings, runs, work_dir, args.runs_dir)
        remember_durations(outcomes)
        wall_s = time.monotonic() - started
        if outcomes:  # an empty shard said so already
            _print_summary(outcomes, wall_s, settings.jobs)
        if settings.report:
            context = {
                "kafka_version": choose_version(settings.kafka_version),
                "backend": "external"
                if settings.kafka_bootstrap
                else choose_backend(settings.kafka_backend),
                "runs_kafka": bool(settings.kafka_bootstrap)
                or backend_class(settings.kafka_backend).runs_kafka,
                "options": {k: v for k, v in vars(options).items() if k != "settings"},
                "scale": settings.scale,
                "settings": settings.to_json(),
                "version": __version__,
            }
            if settings.shard:  # what every shard split: the merge checks it is whole
                context["sharded_from"] = [run_key(i.name, profile) for i, profile in every_run]
            path = write_report(settings.report, outcomes, context)
            console.print(f"Report: {path}")
        elif any(o.gate == "FAIL" for o in outcomes):
            console.print("Run again with --report DIR to keep each run's history for a look.")
        if settings.junit:
            console.print(f"JUnit: {write_junit(settings.junit, outcomes)}")
        write_step_summary(outcomes)
    # a shard with no run that applies may be one part of a run where others do: the merge says
    return exit_code(outcomes, settings.allow_not_applicable or bool(settings.shard))


def _print_summary(outcomes: Sequence[Outcome], wall_s: float, jobs: int) -> None:
    """The table, where the time went, why each failed run failed and what each run measured."""
    from kafka_replay.report.catalog_report import (
        comparisons,
        summary_lines,
        summary_rich_table,
        symptom_lines,
    )

    out = make_console(highlight=False, soft_wrap=True)  # a log's table: as wide as its cells
    out.print(summary_rich_table(outcomes, "Incident replay"), soft_wrap=False)
    out.print(
        f"{len(outcomes)} runs in {wall_s:.0f} s wall time; the runs took "
        f"{sum(o.duration_s for o in outcomes):.0f} s in all (--jobs {jobs}): "
        + _stage_times([o.stage_s for o in outcomes])
    )
    for line in summary_lines(outcomes) + symptom_lines(outcomes):
        out.print(line, markup=False)
    for incident, ratios in comparisons(outcomes).items():
        shown = ", ".join(f"{name} {ratio:g}x" for name, ratio in ratios.items())
        out.print(f"{incident}, remediated over vulnerable: {shown}", markup=False)


def _shard(settings: RunSettings, runs: list[tuple[Incident, str]]) -> list[tuple[Incident, str]]:
    """The runs of ``--shard K/N``, said with how many there are in all."""
    from kafka_replay.playing.shards import known_durations, pick, run_key

    units = {run_key(i.name, profile): [run_key(i.name, profile)] for i, profile in runs}
    mine = set(pick(settings.shard, units, known_durations(settings.shard_times)))
    chosen = [(i, profile) for i, profile in runs if run_key(i.name, profile) in mine]
    said = f"shard {settings.shard}: {len(chosen)} of the {len(runs)} runs"
    if not chosen:
        said += " (none falls to this shard: its report is empty, and it passes)"
    console.print(escape(said), highlight=False)
    return chosen


def _stage_times(stage_s: Sequence[Mapping[str, float]]) -> str:
    """``start-up 12 s, steps 25 s, ...``: the stages' seconds added up over runs."""
    total: dict[str, float] = {}
    for stages in stage_s:
        for stage, seconds in stages.items():
            total[stage] = total.get(stage, 0.0) + seconds
    return ", ".join(f"{stage} {seconds:.0f} s" for stage, seconds in total.items())


def _show_outcome(outcome: Outcome) -> None:
    title = f"{outcome.incident} [{outcome.profile}]"
    mark = {"pass": "[green]pass", "n/a": "[yellow]n/a"}.get(outcome.gate, "[red]FAIL")
    stages = _stage_times([outcome.stage_s])
    console.print(f"{mark}[/] {escape(title)} in {outcome.duration_s:.0f}s ({stages})")
    _Events.tell("outcome", f"{outcome.gate} {title} in {outcome.duration_s:.0f}s ({stages})")
    if not outcome.passed:
        console.print(outcome.explain(), markup=False, highlight=False)


def _run_in_turn(
    settings: RunSettings,
    runs: Sequence[tuple[Incident, str]],
    work_dir: Path,
    runs_dir: Path | None,
) -> list[Outcome]:
    """One run after the other in this process, sharing brokers and Spark."""
    outcomes = []
    options = settings.run_options()
    with settings.session(work_dir, runs_dir) as session:
        for incident, profile in runs:
            title = f"{incident.name} [{profile}]"
            with console.status(escape(title)) as status:
                outcome = session.run(incident, profile, options, _progress(title, status))
            _show_outcome(outcome)
            outcomes.append(outcome)
    return outcomes


def _run_lane(
    settings: RunSettings,
    incidents: Mapping[str, Incident],
    work_dir: Path,
    runs_dir: Path | None,
) -> None:
    """Runs named on stdin (``INCIDENT PROFILE`` a line) until stdin ends, each concluded
    beside the next one's steps (:mod:`kafka_replay.playing.lane`). Brokers and Spark are kept
    between runs."""
    from kafka_replay.playing.lane import run_lane

    with settings.session(work_dir, runs_dir, max_live_clusters=LANE_CLUSTERS) as session:
        run_lane(session, incidents, settings.run_options(), sys.stdin, _show_outcome)


def _run_side_by_side(
    settings: RunSettings,
    runs: Sequence[tuple[Incident, str]],
    runs_dir: Path,
    scratch: Path,
) -> list[Outcome]:
    """``--jobs`` lanes, each a process replaying one run after another (longest first)."""
    from kafka_replay.playing.parallel import WorkerFailed, run_side_by_side

    running: list[str] = []
    with console.status(f"{settings.jobs} at a time") as status:

        def started(name: str) -> None:
            running.append(name)
            status.update(escape("replaying " + ", ".join(running)))

        def done(name: str, outcomes: list[Outcome]) -> None:
            running.remove(name)
            status.update(escape("replaying " + ", ".join(running)))
            for outcome in outcomes:
                _show_outcome(outcome)

        os.environ.update(settings.child_environment())  # the lanes inherit it
        names = list(dict.fromkeys(incident.name for incident, _ in runs))
        profiles = list(dict.fromkeys(profile for _, profile in runs))
        only = {(incident.name, profile) for incident, profile in runs}
        try:
            return run_side_by_side(
                names,
                settings.argv(),
                profiles,
                settings.jobs,
                scratch,
                started,
                done,
                runs_dir,
                only=only,
            )
        except WorkerFailed as exc:
            raise ClusterError(str(exc)) from exc


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(message)s",
        handlers=[log_handler(console)],
    )
    if not args.verbose:  # librdkafka warns about routine retries while a broker warms up
        logging.getLogger("kafka_replay.librdkafka").setLevel(logging.ERROR)
    try:
        return args.run(args)
    except (ServerError, ValueError) as exc:  # a ClusterError is a ServerError
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        console.print("Interrupted.")
        return 130
    except Exception as exc:  # never let a crash pass for a verdict (1 means "fail")
        if interrupted(exc):
            console.print("Interrupted.")
            return 130
        print_exception(console)
        _error(f"{type(exc).__name__}: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
