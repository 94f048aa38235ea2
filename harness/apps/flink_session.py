"""A Flink session cluster as processes: a JobManager and TaskManagers, each its own JVM, that
a job is submitted to, so that a step can aim at one of them by name.

Flink's distribution and its ``bin/`` scripts are not on Maven Central; their entry points are
(``flink-runtime``), and their memory settings, which the scripts compute, are given here
outright for the 2-core machine. A TaskManager that dies is started again, as its deployment
would start it, and Flink restarts the job on it from the last checkpoint; a JobManager that
dies takes the job with it (no high availability), so the whole cluster ends and the instance's
supervisor starts it again, the job resubmitted from its last checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.ports import free_ports
from kafka_replay.servers.process import spawn_in_group, stop_process
from kafka_replay.waiting import wait_for

from .flink_runtime import LOGGING, OPENS, FlinkError

JOBMANAGER = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
#: Each process's JVM; a TaskManager's heap and direct memory are its settings' sums below.
JOBMANAGER_JVM = ("-Xmx256m", "-XX:MaxMetaspaceSize=192m")
TASKMANAGER_JVM = ("-Xmx256m", "-XX:MaxDirectMemorySize=96m", "-XX:MaxMetaspaceSize=128m")
COMMON_JVM = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
)
#: What ``bin/taskmanager.sh`` would compute, fixed: 256 MB of heap (framework and tasks),
#: 96 MB direct (framework off-heap and network), a little managed memory (the hashmap state
#: backend keeps state on the heap), one slot and one core.
TASKMANAGER_MEMORY = {
    "taskmanager.cpu.cores": "1.0",
    "taskmanager.memory.framework.heap.size": "64m",
    "taskmanager.memory.task.heap.size": "192m",
    "taskmanager.memory.managed.size": "16m",
    "taskmanager.memory.framework.off-heap.size": "64m",
    "taskmanager.memory.task.off-heap.size": "0m",
    "taskmanager.memory.network.min": "32m",
    "taskmanager.memory.network.max": "32m",
    "taskmanager.memory.jvm-metaspace.size": "128m",
    "taskmanager.memory.jvm-overhead.min": "32m",
    "taskmanager.memory.jvm-overhead.max": "32m",
    "jobmanager.memory.process.size": "512m",
}
#: A lost TaskManager restarts the job on its replacement; a job that keeps failing ends the
#: client, and with it the instance, after three. A lost TaskManager is noticed within
#: seconds (production: 10 s heartbeats, 50 s timeout).
SESSION_SETTINGS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "3",
    "restart-strategy.fixed-delay.delay": "1s",
    "heartbeat.interval": "1000",
    "heartbeat.timeout": "5000",
    "taskmanager.numberOfTaskSlots": "1",
}
#: How long the JobManager's REST endpoint and the TaskManagers' registration may take.
START_TIMEOUT_S = 60.0
#: A TaskManager that died is started again this long after, as its deployment would.
TASKMANAGER_RESTART_S = 1.0
#: Straight to 127.0.0.1, whatever proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def session_config(ports: Mapping[str, int]) -> dict[str, str]:
    """The settings a session cluster adds to a local one's: the JobManager's RPC and REST
    ports (fixed, for the TaskManagers and the client to find it), the TaskManagers' memory,
    restarts inside the cluster, and quick heartbeats."""
    return {
        "jobmanager.rpc.port": str(ports["rpc"]),
        "rest.port": str(ports["rest"]),
        "rest.bind-port": str(ports["rest"]),
        "taskmanager.rpc.port": "0",
        "taskmanager.data.port": "0",
        **TASKMANAGER_MEMORY,
        **SESSION_SETTINGS,
    }


def free_session_ports() -> dict[str, int]:
    rpc, rest = free_ports(2)
    return {"rpc": rpc, "rest": rest}


def process_command(
    main_class: str, jvm: Sequence[str], classpath: Sequence[Path], conf_dir: Path, scratch: Path
) -> list[str]:
    """One of the cluster's JVMs, reading its settings from ``conf_dir``."""
    return [
        find_java(),
        *jvm,
        *COMMON_JVM,
        *OPENS,
        *LOGGING,
        f"-Djava.io.tmpdir={scratch.resolve()}",
        "-cp",
        ":".join(map(str, classpath)),
        main_class,
        "--configDir",
        str(conf_dir.resolve()),
    ]


class SessionCluster:
    """A JobManager and ``taskmanagers`` TaskManagers in the caller's process group, their
    output relayed to ``sink`` line by line, each start named to ``on_part(name, pid)``."""

    def __init__(
        self,
        classpath: Sequence[Path],
        conf_dir: Path,
        scratch: Path,
        rest_port: int,
        taskmanagers: int,
        env: Mapping[str, str],
        sink: IO[bytes],
        on_part: Callable[[str, int], None],
    ) -> None:
        self.classpath, self.conf_dir, self.scratch = classpath, conf_dir, scratch
        self.rest = f"http://127.0.0.1:{rest_port}"
        self.taskmanagers, self.env, self.sink, self.on_part = taskmanagers, env, sink, on_part
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._sink_lock = threading.Lock()
        self._spawning = threading.Lock()  # a TaskManager started again, or the cluster stopped
        self._closing = threading.Event()
        self._watch: threading.Thread | None = None

    def start(self) -> None:
        """Start the JobManager, then the TaskManagers, until every one has registered."""
        self._spawn("jobmanager", JOBMANAGER, JOBMANAGER_JVM)
        self._wait(lambda: self._get("/overview") is not None, "the JobManager's REST endpoint")
        for index in range(self.taskmanagers):
            self._spawn(f"taskmanager-{index}", TASKMANAGER, TASKMANAGER_JVM)
        self._wait(self._all_registered, f"{self.taskmanagers} TaskManager(s) to register")
        self._watch = threading.Thread(target=self._keep_taskmanagers, daemon=True)
        self._watch.start()

    def jobmanager_exit(self) -> int | None:
        """The JobManager's exit code once it has ended, else None."""
        return self.processes["jobmanager"].poll()

    def stop(self, grace: float = 10.0) -> None:
        """The TaskManagers together, then the JobManager: SIGTERM, then SIGKILL for what
        still runs ``grace`` seconds later."""
        with self._spawning:
            self._closing.set()
        jobmanager = [p for name, p in self.processes.items() if name == "jobmanager"]
        taskmanagers = [p for name, p in self.processes.items() if name != "jobmanager"]
        for processes in (taskmanagers, jobmanager):
            for process in processes:
                if process.poll() is None:
                    with contextlib.suppress(OSError):
                        process.terminate()
            deadline = time.monotonic() + grace
            for process in processes:
                with contextlib.suppress(OSError):
                    stop_process(process, max(0.0, deadline - time.monotonic()))

    def _spawn(self, name: str, main_class: str, jvm: Sequence[str]) -> None:
        command = process_command(main_class, jvm, self.classpath, self.conf_dir, self.scratch)
        process = spawn_in_group(command, subprocess.PIPE, env=self.env)
        self.processes[name] = process
        threading.Thread(target=self._relay, args=(name, process), daemon=True).start()
        self.on_part(name, process.pid)

    def _relay(self, name: str, process: subprocess.Popen[bytes]) -> None:
        """Its output on the instance's, each line led by its name."""
        assert process.stdout is not None
        prefix = f"[{name}] ".encode()
        for line in process.stdout:
            with self._sink_lock:
                self.sink.write(prefix + line)
                self.sink.flush()

    def _keep_taskmanagers(self) -> None:
        """Start a TaskManager again once it has died, as its deployment would."""
        while not self._closing.wait(0.2):
            for name, process in list(self.processes.items()):
                if name.startswith("taskmanager-") and process.poll() is not None:
                    if self._closing.wait(TASKMANAGER_RESTART_S):
                        return
                    with self._spawning:
                        if self._closing.is_set():
                            return
                        self._write(f"{name} {ended(process.returncode)}: starting it again")
                        self._spawn(name, TASKMANAGER, TASKMANAGER_JVM)

    def _write(self, text: str) -> None:
        with self._sink_lock:
            self.sink.write(f"{text}\n".encode())
            self.sink.flush()

    def _all_registered(self) -> bool:
        answer = self._get("/taskmanagers")
        return answer is not None and len(answer.get("taskmanagers", ())) >= self.taskmanagers

    def _get(self, path: str) -> dict | None:
        with (
            contextlib.suppress(OSError, ValueError),
            _DIRECT.open(self.rest + path, timeout=2) as answer,
        ):
            return json.loads(answer.read())
        return None

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        def up() -> bool:
            if ready():
                return True
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise FlinkError(
                        f"the {name} exited with code {process.returncode} while waiting for {what}"
                    )
            return False

        missing = f"no {what} within {START_TIMEOUT_S:.0f}s"
        wait_for(up, START_TIMEOUT_S, missing, every_s=0.2, error=FlinkError)


def ended(code: int) -> str:
    """How a process ended, as a line of the log says it."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was ended by {signal.Signals(-code).name}"
    return f"exited with code {code}"
