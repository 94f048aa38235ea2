"""Run the app under test like a deployment would: N instances, restarted when they crash.

Every start, exit, signal and forced kill is reported as a lifecycle event. An app that
cannot start, or exits before its start-up window is over, fails at once with its last
output; one that keeps dying right after each restart is a crash loop and fails the run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.process import spawn
from harness.cluster.reaper import Lease

from .contract import REPORT_FILE, AppContext, AppSpec

log = logging.getLogger(__name__)
Sink = Callable[[dict[str, Any]], None]
TAIL_LINES = 30


class AppStartError(RuntimeError):
    """The app could not start, or exited during its start-up window; ends with its output."""


class AppCrashLoop(AppStartError):
    """The app exited right after each of several restarts."""


@dataclass(frozen=True)
class RestartPolicy:
    restart: bool = True
    delay_s: float = 1.0
    #: An exit sooner than this after a start counts as a failed start.
    startup_s: float = 3.0
    #: Consecutive failed starts that make a crash loop.
    crash_loop: int = 3
    #: How long SIGTERM gets before SIGKILL when the harness stops an instance.
    grace_s: float = 10.0


@dataclass
class _Instance:
    index: int
    context: AppContext
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    starts: int = 0
    failed_starts: int = 0
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
    ) -> None:
        self.spec = spec
        self.policy = policy or RestartPolicy()
        self._context = context
        self._log_dir = Path(log_dir)
        self._report_dir = report_dir
        self._emit = on_event or (lambda event: None)
        self._python = python
        self._instances: dict[int, _Instance] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._lease: Lease | None = None
        self.failure: AppStartError | None = None

    # --- public ---------------------------------------------------------------------------

    def start(self, instances: int = 1) -> Supervisor:
        """Start ``instances`` and wait out their start-up window; raise if any exits in it."""
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
                instance = _Instance(index, context, self._log_dir / f"app-{index}.log")
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

    def running(self) -> list[int]:
        with self._lock:
            return [
                i
                for i, inst in sorted(self._instances.items())
                if inst.process is not None and inst.process.poll() is None
            ]

    def check(self) -> None:
        """Raise the failure the watcher found (a crash loop), if any."""
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
        if self._report_dir is not None:
            env[REPORT_FILE] = str(self._report_dir / f"app-{instance.index}.jsonl")
        instance.starts += 1
        with instance.log_path.open("ab") as output:
            output.write(f"=== kafka-replay: start {instance.starts} ===\n".encode())
            output.flush()
            try:
                instance.process = spawn(command, output, self._lease, env=env)
            except OSError as exc:
                raise AppStartError(
                    f"could not start app instance {instance.index} ({command[0]}): {exc}"
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
            }
        )

    def _wait_startup(self, instances: list[_Instance]) -> None:
        deadline = time.monotonic() + self.policy.startup_s
        while time.monotonic() < deadline:
            for instance in instances:
                process = instance.process
                if process is not None and process.poll() is not None and not instance.stopping:
                    self._record_exit(instance)
                    raise AppStartError(
                        f"app {self.spec.name!r} instance {instance.index} exited with code "
                        f"{process.returncode} within its first {self.policy.startup_s:.0f}s; "
                        f"its last output ({instance.log_path}):\n{instance.tail()}"
                    )
            time.sleep(0.05)

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            with self._lock:
                for instance in self._instances.values():
                    self._tend(instance)

    def _tend(self, instance: _Instance) -> None:
        process = instance.process
        crashed = process is not None and process.poll() is not None and not instance.stopping
        if crashed and process.pid not in instance.exits:
            self._record_exit(instance)
            self._after_crash(instance)
        if instance.restart_at is not None and time.monotonic() >= instance.restart_at:
            self._launch(instance, restart=True)

    def _after_crash(self, instance: _Instance) -> None:
        uptime = time.monotonic() - instance.started_at
        instance.failed_starts = instance.failed_starts + 1 if uptime < self.policy.startup_s else 0
        if instance.failed_starts >= self.policy.crash_loop:
            self._emit(
                {
                    "kind": "crash_loop",
                    "instance": instance.index,
                    "failed_starts": instance.failed_starts,
                }
            )
            self.failure = AppCrashLoop(
                f"app {self.spec.name!r} instance {instance.index} exited within "
                f"{self.policy.startup_s:.0f}s of each of its last {instance.failed_starts} "
                f"starts; its last output ({instance.log_path}):\n{instance.tail()}"
            )
        elif self.policy.restart:
            instance.restart_at = time.monotonic() + self.policy.delay_s

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
                "uptime_s": round(time.monotonic() - instance.started_at, 3),
            }
        )

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
