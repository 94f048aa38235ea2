"""Run the app under test like a deployment would: N instances, restarted when they exit.

Every start, exit, signal and forced kill is reported as a lifecycle event. An instance is
started once it is seen working (the readiness probe, e.g. its consumer joined the group) or,
without a probe, once it outlived its start-up window. An app that cannot start, or fails
before it is ready the first time, fails at once with its last output. After that, exits are
what incidents are made of: the instance is restarted by its policy, with a back-off that
doubles while it keeps dying young (a crash loop, recorded as such), and the run goes on.
An app from an image runs each instance as a container (:mod:`.image_app`), which the same
verbs reach: the signals of a process group become ``docker kill``, ``pause`` and ``unpause``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from kafka_replay.servers.process import spawn
from kafka_replay.servers.reaper import Lease
from kafka_replay.waiting import poll

from .contract import PART_EVENT, READY_EVENT, REPORT_FILE, AppContext, AppSpec
from .image_app import ContainerProcess

log = logging.getLogger(__name__)
#: How the two events an app says itself by look in its report file's lines.
READY_LINE, PART_LINE = f'"{READY_EVENT}"'.encode(), f'"{PART_EVENT}"'.encode()
Sink = Callable[[dict[str, Any]], None]
#: An instance's process: a command's, or a container of the app's image.
Process = subprocess.Popen[bytes] | ContainerProcess
#: Whether ``n`` instances are up and working (e.g. the group lists ``n`` members).
ReadinessProbe = Callable[[int], bool]
TAIL_LINES = 30
#: What a policy may say: a deployment (``always``), ``on-failure``, a scheduled job run
#: ``every:SECONDS`` after the last run ended, or ``never``.
RESTART_MODES = ("always", "on-failure", "every:SECONDS", "never")


class AppStartError(RuntimeError):
    """The app could not start, or failed before it was ready; ends with its output."""


def parse_restart(text: str) -> tuple[str, float | None]:
    """``always``, ``on-failure``, ``never`` or ``every:S``, as (mode, interval in seconds)."""
    mode, _, interval = text.partition(":")
    if mode == "every":
        try:
            seconds = float(interval)
        except ValueError:
            seconds = -1.0
        if seconds >= 0:
            return mode, seconds
    elif mode in ("always", "on-failure", "never") and not interval:
        return mode, None
    raise ValueError(f"restart policy {text!r} is not one of {', '.join(RESTART_MODES)}")


@dataclass(frozen=True)
class RestartPolicy:
    """What happens when an instance exits, and when an instance counts as started."""

    restart: str = "always"
    delay_s: float = 1.0
    #: The back-off doubles with each consecutive short life, up to this.
    max_delay_s: float = 8.0
    #: A life shorter than this is short; without a probe, outliving it means started.
    startup_s: float = 3.0
    #: With a readiness probe: how long a first start may take to be seen working.
    ready_timeout_s: float = 30.0
    #: Consecutive short lives that make a crash loop (recorded, and the back-off grows).
    crash_loop: int = 3
    #: How long SIGTERM gets before SIGKILL when the harness stops an instance.
    grace_s: float = 10.0

    def __post_init__(self) -> None:
        parse_restart(self.restart)

    def next_delay(self, code: int, short_lives: int) -> float | None:
        """Seconds until the next start after an exit with ``code``; None to stay down."""
        mode, interval = parse_restart(self.restart)
        if mode == "never" or (mode == "on-failure" and code == 0):
            return None
        if mode == "every":
            return interval
        return min(self.max_delay_s, self.delay_s * 2 ** max(0, short_lives - 1))


@dataclass
class _Instance:
    index: int
    context: AppContext
    log_path: Path
    process: Process | None = None
    started_at: float = 0.0
    starts: int = 0
    short_lives: int = 0
    stopping: bool = False
    restart_at: float | None = None
    exits: list[int] = field(default_factory=list)

    def tail(self, lines: int = TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"


def _signal_name(returncode: int) -> str | None:
    return signal.Signals(-returncode).name if returncode < 0 else None


class Supervisor:
    """Starts, watches and restarts the instances of one app."""

    def __init__(
        self,
        spec: AppSpec,
        context: Callable[[int], AppContext],
        log_dir: Path,
        on_event: Sink | None = None,
        policy: RestartPolicy | None = None,
        report_dir: Path | None = None,
        python: str = sys.executable,
        ready: ReadinessProbe | None = None,
        python_path: Path | None = None,
        name: str | None = None,
    ) -> None:
        """``python_path``: put first on the app's ``PYTHONPATH`` (a chosen client release).
        ``name``: a pipeline's service: its files are ``app-<name>-<instance>`` and each of its
        lifecycle events says ``app``."""
        self.spec = spec
        self.policy = policy or RestartPolicy()
        self._context = context
        self._log_dir = Path(log_dir)
        self._report_dir = report_dir
        self._prefix = f"app-{name}-" if name else "app-"
        emit = on_event or (lambda event: None)
        self._emit = (lambda event: emit({**event, "app": name})) if name else emit
        self._python = python
        self._ready = ready
        self._python_path = python_path
        self._instances: dict[int, _Instance] = {}
        #: Per instance, how far its report file was read and the events an app says itself
        #: by (``ready``, ``part``), so that each look reads only what was appended since.
        self._said: dict[int, tuple[int, list[dict[str, Any]]]] = {}
        self._said_lock = threading.Lock()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._lease: Lease | None = None
        self.failure: AppStartError | None = None

    # --- public ---------------------------------------------------------------------------

    def start(self, instances: int = 1) -> Supervisor:
        """Start ``instances`` and wait until they are working; raise if one fails first."""
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self._lease = Lease.take()
        try:
            for index in range(instances):
                self.start_instance(index, watch=False)
            self._wait_startup([self._instances[i] for i in range(instances)])
        except BaseException:
            self.stop(grace=0)
            raise
        self._watcher = threading.Thread(target=self._watch, name="app-supervisor", daemon=True)
        self._watcher.start()
        return self

    def start_instance(self, index: int, watch: bool = True) -> None:
        """Start instance ``index`` (new, or stopped earlier), e.g. to force a rebalance."""
        with self._lock:
            instance = self._instances.get(index)
            if instance is None:
                context = self._context(index)
                instance = _Instance(index, context, self._log_dir / f"{self._prefix}{index}.log")
                self._instances[index] = instance
            if instance.process is not None and instance.process.poll() is None:
                return
            instance.stopping = False
            self._launch(instance, restart=False)
        if watch:
            self._wait_startup([instance])

    def stop_instance(self, index: int, grace: float | None = None) -> None:
        """SIGTERM, then SIGKILL after ``grace``; the instance stays down (a scale-down)."""
        with self._lock:
            instance = self._instances[index]
            instance.stopping = True
            instance.restart_at = None
            process = instance.process
        if process is None or process.poll() is not None:
            return
        grace = self.policy.grace_s if grace is None else grace
        self._emit({"kind": "stop", "instance": index, "pid": process.pid})
        self._signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self._emit(
                {
                    "kind": "killed_after_grace",
                    "instance": index,
                    "pid": process.pid,
                    "grace_s": grace,
                }
            )
            self._signal_group(process, signal.SIGKILL)
            process.wait()
        self._record_exit(instance)

    def restart_instance(self, index: int, client: Mapping[str, Any]) -> None:
        """Stop instance ``index`` (SIGTERM) and start it again with ``client`` over its settings.

        A rolling change of one instance's configuration, as a deployment rolls a new config
        onto its pods (e.g. ``group.protocol = consumer``, KIP-848's online migration). The
        settings stay with the instance: a crash restart later keeps them. Recorded as a
        ``reconfigure`` lifecycle event with the instance's whole client config.
        """
        with self._lock:
            instance = self._instances.get(index)
            context = instance.context if instance is not None else self._context(index)
        if instance is not None:
            self.stop_instance(index)
        settings = {**context.client_config, **client}
        with self._lock:
            if instance is None:
                instance = _Instance(index, context, self._log_dir / f"{self._prefix}{index}.log")
                self._instances[index] = instance
            instance.context = replace(context, client_config=settings)
            instance.short_lives = 0
        self._emit(
            {"kind": "reconfigure", "instance": index, "client": dict(client), "config": settings}
        )
        self.start_instance(index)

    def renew_contexts(self) -> None:
        """Give every instance the cluster its context is built for now (a failover moved the
        app to another cluster); each keeps its own client settings. Takes effect as each
        instance next starts."""
        with self._lock:
            for index, instance in self._instances.items():
                now = self._context(index).bootstrap_servers
                instance.context = replace(instance.context, bootstrap_servers=now)

    def signal(self, index: int, sig: signal.Signals) -> None:
        """Send ``sig`` to an instance's process group: SIGKILL for a crash, SIGSTOP to freeze."""
        with self._lock:
            process = self._instances[index].process
            if process is None or process.poll() is not None:
                raise RuntimeError(f"instance {index} is not running")
            self._emit(
                {"kind": "signal", "instance": index, "pid": process.pid, "signal": sig.name}
            )
            self._signal_group(process, sig)

    def parts(self, index: int) -> dict[str, int]:
        """The processes the running instance named for steps (``part`` events: a Flink
        session's ``jobmanager`` and ``taskmanager-N``), each name's newest, while it runs."""
        instance = self._instances[index]
        process = instance.process
        if not isinstance(process, subprocess.Popen) or process.poll() is not None:
            return {}
        named = {e.get("name"): e.get("part_pid") for e in self._reported(instance, PART_EVENT)}
        return {name: pid for name, pid in named.items() if isinstance(pid, int) and name}

    def signal_part(self, index: int, part: str, sig: signal.Signals) -> int:
        """Send ``sig`` to the process the instance named ``part``; return its pid. Only a
        process of the instance's own (its child, still running) is signalled."""
        parts = self.parts(index)
        pid = parts.get(part)
        if pid is None:
            named = ", ".join(sorted(parts)) or "none"
            raise RuntimeError(f"instance {index} runs no part {part!r} (its parts: {named})")
        with self._lock:
            process = self._instances[index].process
            try:
                root = psutil.Process(process.pid) if process is not None else None
                own = root is not None and pid in {c.pid for c in root.children(recursive=True)}
            except psutil.Error:
                own = False
            if not own:
                raise RuntimeError(f"instance {index}'s part {part!r} is not running")
            self._emit(
                {"kind": "signal", "instance": index, "pid": pid, "part": part, "signal": sig.name}
            )
            os.kill(pid, sig)
        return pid

    def instance_holding(self, port: int) -> int | None:
        """The running instance one of whose processes has a TCP connection from ``port`` on
        this host (the client end a proxy saw), or None: none does, or its processes cannot be
        looked into (a container run as another user)."""
        with self._lock:
            processes = {
                i: inst.process
                for i, inst in self._instances.items()
                if isinstance(inst.process, subprocess.Popen) and inst.process.poll() is None
            }
        for index, process in sorted(processes.items()):
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(process.pid)
                for member in (root, *root.children(recursive=True)):
                    with contextlib.suppress(psutil.Error):
                        if any(
                            c.laddr and c.laddr.port == port
                            for c in member.net_connections(kind="tcp")
                        ):
                            return index
        return None

    def running(self) -> list[int]:
        with self._lock:
            return [
                i
                for i, inst in sorted(self._instances.items())
                if inst.process is not None and inst.process.poll() is None
            ]

    def check(self) -> None:
        """Raise the failure the watcher found (a restart that could not launch), if any."""
        if self.failure is not None:
            raise self.failure

    def output(self, index: int) -> str:
        return self._instances[index].tail(10_000)

    def stop(self, grace: float | None = None) -> None:
        """Stop every instance; the app gets SIGTERM and ``grace`` seconds before SIGKILL."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None
        threads = [
            threading.Thread(target=self.stop_instance, args=(index, grace))
            for index in list(self._instances)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- internals ------------------------------------------------------------------------

    def _launch(self, instance: _Instance, restart: bool) -> None:
        assert self._lease is not None
        command = self.spec.command(instance.context, self._python)
        env = {**os.environ, **instance.context.env()}
        if self._python_path is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [str(self._python_path), os.environ.get("PYTHONPATH")])
            )
        if self._report_dir is not None:
            env[REPORT_FILE] = str(self._report_dir / f"{self._prefix}{instance.index}.jsonl")
        instance.starts += 1
        with instance.log_path.open("ab") as output:
            output.write(f"=== kafka-replay: start {instance.starts} ===\n".encode())
            output.flush()
            try:
                if self.spec.image is not None:
                    instance.process = self._container(instance, command)
                else:
                    instance.process = spawn(command, output, self._lease, env=env)
            except OSError as exc:
                what = self.spec.image or command[0]
                raise AppStartError(
                    f"could not start app instance {instance.index} ({what}): {exc}"
                ) from exc
        instance.started_at = time.monotonic()
        instance.restart_at = None
        self._emit(
            {
                "kind": "start",
                "instance": instance.index,
                "pid": instance.process.pid,
                "attempt": instance.starts,
                "restart": restart,
                "command": command,
                **self._container_fields(instance.process),
            }
        )

    def _container(self, instance: _Instance, arguments: list[str]) -> ContainerProcess:
        """A container of the app's image: the contract is its whole environment, and the
        directories of its report file and client properties are bound where the contract says."""
        assert self._lease is not None and self.spec.image is not None
        env = instance.context.env()
        mounts = [instance.context.properties_dir, self._report_dir]
        if self._report_dir is not None:
            env[REPORT_FILE] = str(self._report_dir / f"{self._prefix}{instance.index}.jsonl")
        return ContainerProcess(
            self.spec.image,
            arguments,
            env,
            instance.log_path,
            self._lease,
            mounts=[Path(path) for path in mounts if path is not None],
            instance=instance.index,
        )

    def _container_fields(self, process: Process | None) -> dict[str, str]:
        """What a start event says of a container: its image and id."""
        if not isinstance(process, ContainerProcess):
            return {}
        return {"image": str(self.spec.image), "container": process.container_id}

    def _wait_startup(self, instances: list[_Instance]) -> None:
        """Until the instances are seen working; an exit before then fails (code 0 completes)."""
        waiting = [i for i in instances if i.starts == 1 or self._ready is not None]
        limit = self.policy.ready_timeout_s if self._ready else self.policy.startup_s

        def started() -> bool:
            for instance in list(waiting):
                process = instance.process
                if process is None or process.poll() is None or instance.stopping:
                    continue
                with self._lock:
                    fresh = process.pid not in instance.exits
                    self._record_exit(instance)
                    if fresh:
                        self._schedule(instance)
                if process.returncode != 0 and instance.starts == 1:
                    instance.restart_at = None
                    raise AppStartError(
                        f"app {self.spec.name!r} instance {instance.index} exited with code "
                        f"{process.returncode} before it was ready; its last output "
                        f"({instance.log_path}):\n{instance.tail()}"
                    )
                waiting.remove(instance)
            if not waiting or (self._ready is not None and self._ready(len(self.running()))):
                return True
            return all(self._reported_ready(instance) for instance in waiting)

        if poll(started, limit) is None and self._ready is not None:
            raise AppStartError(
                f"app {self.spec.name!r} instance {waiting[0].index} did not join its "
                f"consumer group within {limit:.0f}s; its last output "
                f"({waiting[0].log_path}):\n{waiting[0].tail()}"
            )

    def _reported_ready(self, instance: _Instance) -> bool:
        """Whether this start of ``instance`` reported itself working (a ``ready`` event in its
        report file, from its own process): for an app that reads without joining a consumer
        group, as a Flink job does."""
        return any(True for _ in self._reported(instance, READY_EVENT))

    def _reported(self, instance: _Instance, kind: str) -> Iterator[dict[str, Any]]:
        """The ``kind`` events (``ready`` or ``part``) this start of ``instance`` wrote to its
        report file, in order."""
        process = instance.process
        if self._report_dir is None or process is None:
            return
        for event in self._said_by(instance.index):
            if event.get("kind") == kind and event.get("pid") == process.pid:
                yield event

    def _said_by(self, index: int) -> list[dict[str, Any]]:
        """The ``ready`` and ``part`` events of instance ``index``'s report file, read on from
        where the last look stopped (the file is appended to, and an instrumented app's grows
        with every batch)."""
        assert self._report_dir is not None
        path = self._report_dir / f"{self._prefix}{index}.jsonl"
        with self._said_lock:
            offset, events = self._said.get(index, (0, []))
            with contextlib.suppress(OSError), path.open("rb") as file:
                file.seek(offset)
                appended = file.read()
                complete = appended.rfind(b"\n") + 1  # a line still being written waits
                for line in appended[:complete].splitlines():
                    if READY_LINE not in line and PART_LINE not in line:  # most apps report neither
                        continue
                    with contextlib.suppress(ValueError):
                        events.append(json.loads(line))
                offset += complete
            self._said[index] = (offset, events)
            return list(events)

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            with self._lock:
                for instance in self._instances.values():
                    self._tend(instance)

    def _tend(self, instance: _Instance) -> None:
        process = instance.process
        exited = process is not None and process.poll() is not None and not instance.stopping
        if exited and process.pid not in instance.exits:
            self._record_exit(instance)
            self._schedule(instance)
        if instance.restart_at is not None and time.monotonic() >= instance.restart_at:
            try:
                self._launch(instance, restart=True)
            except AppStartError as exc:
                self.failure = exc

    def _schedule(self, instance: _Instance) -> None:
        """After an exit: count short lives (a crash loop) and set the next start, if any."""
        process = instance.process
        assert process is not None and process.returncode is not None
        uptime = time.monotonic() - instance.started_at
        short = process.returncode != 0 and uptime < self.policy.startup_s
        instance.short_lives = instance.short_lives + 1 if short else 0
        delay = self.policy.next_delay(process.returncode, instance.short_lives)
        if instance.short_lives >= self.policy.crash_loop:
            self._emit(
                {
                    "kind": "crash_loop",
                    "instance": instance.index,
                    "short_lives": instance.short_lives,
                    "next_start_in_s": delay,
                }
            )
        instance.restart_at = None if delay is None else time.monotonic() + delay

    def _record_exit(self, instance: _Instance) -> None:
        process = instance.process
        if process is None or process.returncode is None or process.pid in instance.exits:
            return
        instance.exits.append(process.pid)
        code = process.returncode
        self._emit(
            {
                "kind": "exit",
                "instance": instance.index,
                "pid": process.pid,
                "code": code,
                "signal": _signal_name(code),
                "expected": instance.stopping,
                "completed": code == 0 and not instance.stopping,
                "uptime_s": round(time.monotonic() - instance.started_at, 3),
            }
        )

    @staticmethod
    def _signal_group(process: Process, sig: signal.Signals) -> None:
        """The whole app: a process's group, or a container (paused for SIGSTOP)."""
        if isinstance(process, ContainerProcess):
            process.send_signal(sig)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
