"""A Flink job as the app under test: ``python -m kafka_replay.apps.flink_job JOB.jar
[--class MAIN] [--with GROUP:ARTIFACT:VERSION]... [--set KEY=VALUE]... [--cluster
local|session] [--taskmanagers N] [-- ARGUMENT...]``.

It follows the app contract like any other app, so every face of the harness runs it (``--app``,
a definition's ``[app] command``, pytest, the action) and every verb reaches it: the job runs
as ``flink run --target local`` runs it, its JobManager and TaskManager in one JVM in this
process's group, so a kill -9, a freeze or a stop of the instance is one of the whole cluster;
with ``--cluster session``, on a JobManager and TaskManagers of their own
(:mod:`.flink_session`), each named for a step to aim at.
The job reads the contract's variables itself (``REPLAY_INPUT_TOPIC``, ``REPLAY_CLIENT_PROPERTIES``,
...), as any app does. Each instance checkpoints into a directory of its own that outlives its
restarts, and each start resumes from the last completed checkpoint there, as a deployment
without high availability resubmits a job. An instance counts as started once its job has
completed a checkpoint: a Flink job reads its partitions without joining the consumer group.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from kafka_replay.servers.process import spawn_in_group, stop_process

from . import flink_runtime, flink_session
from .connect_worker import pairs
from .contract import CLIENT_PROPERTIES, PART_EVENT, READY_EVENT, AppContext
from .instrument import Reporter


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The options, and the job's own arguments: every word after the first ``--``, wherever
    the options stand."""
    given = list(argv)
    cut = given.index("--") if "--" in given else len(given)
    arguments = _parser().parse_args(given[:cut])
    arguments.arguments = given[cut + 1 :]
    return arguments


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_replay.apps.flink_job",
        description="Run a Flink job on a local Flink cluster as the app under test.",
    )
    parser.add_argument("jar", type=Path, help="the job's jar, as `flink run` takes it")
    parser.add_argument("--class", dest="main_class", help="its main class (else the manifest's)")
    parser.add_argument(
        "--with",
        dest="extra",
        action="append",
        default=[],
        help="Maven coordinates of a connector the jar does not carry, put on the job's "
        "classpath (repeatable)",
    )
    parser.add_argument(
        "--set", action="append", default=[], help="a Flink setting KEY=VALUE (repeatable)"
    )
    parser.add_argument(
        "--cluster",
        choices=("local", "session"),
        default="local",
        help="local (default): a MiniCluster in the job's own JVM; session: a JobManager and "
        "--taskmanagers TaskManagers as processes, each named for steps, the job submitted",
    )
    parser.add_argument(
        "--taskmanagers", type=int, default=1, help="TaskManagers of a session cluster"
    )
    parser.add_argument("--version", default=flink_runtime.FLINK_VERSION)
    parser.add_argument(
        "--fetch",
        action="store_true",
        help="only fetch Flink and the --with connectors from Maven Central (once, then cached)",
    )
    parser.usage = "%(prog)s JAR [options] [-- ARGUMENT...]"
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse(sys.argv[1:] if argv is None else argv)
    try:
        if arguments.fetch:
            fetch(arguments.version, arguments.extra)
            return 0
        return run_job(arguments)
    except (RuntimeError, ValueError) as exc:  # FlinkError, ServerError, the contract's
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2


def fetch(version: str, extra: Sequence[str]) -> None:
    """Resolve Flink ``version`` and ``extra`` into the cache, saying where."""
    jars = flink_runtime.flink_classpath(version)
    print(f"Flink {version}: {len(jars)} jars in {jars[0].parent}")
    for coordinates in extra:
        print(f"{coordinates}: {len(flink_runtime.user_jars(coordinates, version))} jars")


def run_job(arguments: argparse.Namespace) -> int:
    """Run the job from its last checkpoint, and last as long as it does (its exit code, or
    128 + the signal that ended it)."""
    if not arguments.jar.is_file():
        raise flink_runtime.FlinkError(f"{arguments.jar}: no such job jar")
    if arguments.taskmanagers < 1:
        raise flink_runtime.FlinkError(f"--taskmanagers {arguments.taskmanagers}: at least 1")
    session = arguments.cluster == "session"
    settings = pairs(arguments.set, "--set")
    extra = [jar for c in arguments.extra for jar in flink_runtime.user_jars(c, arguments.version)]
    context = AppContext.from_env()  # outside the harness: says which variables are unset
    classpath = flink_runtime.flink_classpath(arguments.version)
    with contextlib.ExitStack() as cleanup:
        work_dir = _instance_dir(context.instance, cleanup)
        checkpoints, scratch = work_dir / "checkpoints", work_dir / "tmp"
        shutil.rmtree(scratch, ignore_errors=True)  # a killed start's
        scratch.mkdir(parents=True)
        cleanup.callback(shutil.rmtree, scratch, ignore_errors=True)
        ports = flink_session.free_session_ports() if session else {}
        ours = flink_session.session_config(ports) if session else {}
        config = flink_runtime.cluster_config(checkpoints, scratch, {**ours, **settings})
        flink_runtime.write_config(work_dir / "conf", config)
        restore = flink_runtime.newest_checkpoint(checkpoints)
        print(
            f"restoring from {restore}"
            if restore
            else f"no checkpoint in {checkpoints}: a fresh start",
            flush=True,
        )
        command = flink_runtime.run_command(
            classpath=classpath,
            main_class=arguments.main_class,
            jar=arguments.jar,
            extra_jars=extra,
            restore=restore,
            arguments=arguments.arguments,
            scratch=scratch,
            target="remote" if session else "local",
        )
        env = {**os.environ, "FLINK_CONF_DIR": str(work_dir / "conf")}
        started = time.time()
        cluster = None
        if session:
            cluster = _start_session(arguments.taskmanagers, classpath, work_dir, ports, env)
            cleanup.callback(cluster.stop)
        job = spawn_in_group(command, subprocess.PIPE, env=env)
        for stop in (signal.SIGTERM, signal.SIGINT):
            signal.signal(stop, lambda number, _frame: job.send_signal(number))
        watch = threading.Thread(
            target=_report_ready, args=(job, checkpoints, started), daemon=True
        )
        watch.start()
        lost: list[int] = []  # the JobManager's exit code, once it took the job with it
        if cluster is not None:
            threading.Thread(target=_end_with, args=(cluster, job, lost), daemon=True).start()
        cause = relay(job.stdout, sys.stdout.buffer)
        code = job.wait()
    if lost:
        print(
            f"error: the JobManager {flink_session.ended(lost[0])} and the job with it (no "
            "high availability): a start of the instance resubmits it from its last checkpoint",
            file=sys.stderr,
            flush=True,
        )
        return 1
    if code > 0 and cause:  # the root cause, where the end of the app's log shows it
        print(f"error: the job failed: {cause}", file=sys.stderr, flush=True)
    return code if code >= 0 else 128 - code


def _start_session(
    taskmanagers: int,
    classpath: Sequence[Path],
    work_dir: Path,
    ports: dict[str, int],
    env: dict[str, str],
) -> flink_session.SessionCluster:
    """The session cluster the job is submitted to, each of its processes reported by name
    (a ``part`` event), so that a step can aim at it."""
    reporter = Reporter.from_env()
    cluster = flink_session.SessionCluster(
        classpath,
        work_dir / "conf",
        work_dir / "tmp",
        ports["rest"],
        taskmanagers,
        env,
        sys.stdout.buffer,
        lambda name, pid: reporter.event(PART_EVENT, name=name, part_pid=pid),
    )
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    print(f"a session cluster: a JobManager and {taskmanagers} TaskManager(s)", flush=True)
    return cluster


def _end_with(cluster: flink_session.SessionCluster, job: Any, lost: list[int]) -> None:
    """End the job's client when the JobManager has died: the job is gone with it."""
    while job.poll() is None:
        code = cluster.jobmanager_exit()
        if code is not None:
            lost.append(code)
            stop_process(job, 5.0)
            return
        time.sleep(0.2)


def _instance_dir(instance: int, cleanup: contextlib.ExitStack) -> Path:
    """The instance's directory: in the run's (beside its client properties), so that its
    checkpoints outlive its restarts; outside the harness, a temporary one."""
    properties_file = os.environ.get(CLIENT_PROPERTIES)
    if properties_file:
        return Path(properties_file).parent / f"flink-job-{instance}"
    return Path(cleanup.enter_context(tempfile.TemporaryDirectory()))


def relay(source: IO[bytes], sink: IO[bytes]) -> str | None:
    """Copy the job's output to ``sink`` line by line until it ends; return its last
    ``Caused by:`` line (the root cause of the last failure Flink logged), if any. A failed
    job's log ends with its shutdown, far below the reason."""
    cause = None
    for line in source:
        sink.write(line)
        sink.flush()
        if line.startswith(b"Caused by: "):
            cause = line.decode(errors="replace").removeprefix("Caused by: ").strip()
    return cause


def _report_ready(job: Any, checkpoints: Path, started: float) -> None:
    """Report itself ready once the job completed a checkpoint of this start (its sources
    read and its sinks write): what the supervisor waits for."""
    while job.poll() is None:
        newest = flink_runtime.newest_checkpoint(checkpoints, since=started)
        if newest is not None:
            print(f"the job completed its first checkpoint: {newest}", flush=True)
            Reporter.from_env().event(READY_EVENT, checkpoint=str(newest))
            return
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
