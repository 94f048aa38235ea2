"""Start helper processes (servers, apps) that cannot outlive the harness.

Each runs in its own session, so a Ctrl-C in the terminal reaches the harness first and it
stops them in order. On Linux each also dies with the harness (``PR_SET_PDEATHSIG``), and
every one is tagged with its lease so the next start can reap it if all else failed.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from kafka_replay.waiting import poll, wait_for

from .reaper import LEASE_ENV, Lease

#: How long the threads of a SIGSTOPped process get to stop (each stops when it is next scheduled).
FREEZE_TIMEOUT_S = 10.0


def _dying_with_parent(
    command: Sequence[str], env: Mapping[str, str], cwd: Path | None
) -> list[str]:
    """``command`` run so that Linux SIGKILLs it when its parent thread exits
    (``PR_SET_PDEATHSIG``, set by util-linux's ``setpriv`` before it execs the command).

    Not a pre-exec hook: with one, Python forks rather than vforks, and the child runs what
    the harness's libraries registered for a fork (gRPC's, loaded with a Spark Connect
    client, aborted an app before its exec). Only from the main thread: the signal follows
    the thread that forked, so a server started from a worker thread would otherwise die with
    that thread. Where ``setpriv`` is missing, or the harness is killed in the moment before
    ``setpriv`` sets the signal, the leases' reaper is what cleans up.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if setpriv is None or not in_main_thread:
        return list(command)
    _runnable(command, env, cwd)
    return [setpriv, "--pdeathsig", "KILL", "--", *command]


def _runnable(command: Sequence[str], env: Mapping[str, str], cwd: Path | None) -> None:
    """Raise what starting ``command`` directly would (a missing or not executable program),
    at once: through ``setpriv`` it would instead be an exit code and a line in the log.
    Looked up as Popen looks it up: on the child's ``PATH``, or from its ``cwd``."""
    program = command[0]
    if os.sep in program:
        found: str | None = str(Path(cwd or ".") / program)
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None or not os.path.isfile(found):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if not os.access(found, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


def spawn(
    command: Sequence[str],
    output: IO[bytes],
    lease: Lease,
    *,
    env: Mapping[str, str] | None = None,
    die_with_owner: bool = True,
    cwd: Path | None = None,
    stdin: int = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Start ``command`` with stdout and stderr going to ``output``, recorded in ``lease``."""
    env = {**(os.environ if env is None else env), LEASE_ENV: lease.token}
    process = subprocess.Popen(
        _dying_with_parent(command, env, cwd) if die_with_owner else list(command),
        stdin=stdin,
        stdout=output,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    lease.add_process(process.pid)
    return process


def spawn_in_group(
    command: Sequence[str], output: IO[bytes] | int, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``command`` as a helper of the calling process: in its process group (a signal
    to the group, as a supervisor's kill -9 or freeze, reaches both), dying with it, and
    tagged with the caller's own lease (inherited in the environment), so the reaper that
    kills the caller's group kills it too. ``output``: where its output goes (a file, or
    ``subprocess.PIPE`` for the caller to read)."""
    env = dict(os.environ if env is None else env)
    return subprocess.Popen(
        _dying_with_parent(command, env, None),
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        env=env,
    )


def stop_process(process: subprocess.Popen[bytes] | None, grace: float) -> bool:
    """SIGTERM ``process``, then SIGKILL once ``grace`` seconds have passed; True when it had
    to be killed. A process that has ended already (or none) is left alone."""
    if process is None or process.poll() is not None:
        return False
    process.terminate()
    try:
        process.wait(grace)
        return False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return True


def run_tool(
    command: Sequence[str],
    what: str,
    error: type[Exception],
    timeout: float,
    *,
    env: Mapping[str, str] | None = None,
    tail_lines: int = 20,
    keep: Callable[[str], bool] = bool,
) -> subprocess.CompletedProcess[str]:
    """Run a tool to its end (a build, a resolver, an admin client) and return what it printed;
    ``error``, naming ``what`` and the last ``tail_lines`` of its output that ``keep`` takes,
    when it runs over ``timeout`` seconds or exits other than 0."""

    def tail(*outputs: str | bytes | None) -> str:
        text = "".join(
            o.decode(errors="replace") if isinstance(o, bytes) else o or "" for o in outputs
        )
        lines = [line for line in text.splitlines() if keep(line)]
        return ":\n" + "\n".join(lines[-tail_lines:]) if lines else ""

    try:
        result = subprocess.run(
            list(command), capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired as expired:
        raise error(
            f"{what} did not finish in {timeout:.0f}s{tail(expired.stdout, expired.stderr)}"
        ) from None
    if result.returncode != 0:
        raise error(f"{what} failed (exit {result.returncode}){tail(result.stdout, result.stderr)}")
    return result


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def thread_states(pid: int) -> list[str] | None:
    """The state letter of each thread of ``pid`` (``T``: stopped, ``Z``: exited); None where
    /proc cannot say."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    states = []
    for task in tasks:
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            continue  # a thread that ended meanwhile
    return states


def wait_answering(
    answers: Callable[[], bool],
    exit_code: Callable[[], int | None],
    timeout: float,
    interval: float = 0.1,
) -> str | None:
    """Wait until a server just started ``answers()``: None once it does, else why it never
    will (``exit_code()`` is not None: it exited; or ``timeout`` seconds passed), for the
    caller's error, which adds the end of the server's log."""

    def settled() -> str | None:
        if answers():
            return ""
        code = exit_code()
        return None if code is None else f"exited with {code} before it answered"

    why = poll(settled, timeout, every_s=interval)
    return f"did not answer within {timeout:.0f}s" if why is None else why or None


def wait_frozen(pid: int, timeout: float = FREEZE_TIMEOUT_S) -> None:
    """Wait until every thread of ``pid`` has stopped after a SIGSTOP.

    The signal reaches a process's threads one at a time, each when it is next scheduled: on a
    loaded machine a JVM went on running for tens of milliseconds, long enough to answer a
    request after the harness had said it was frozen.
    """

    def stopped() -> bool:
        states = thread_states(pid)
        return not states or all(state in "TtZX" for state in states)

    running = f"process {pid} did not stop within {timeout:.0f}s of SIGSTOP"
    wait_for(stopped, timeout, running, every_s=0.001, error=RuntimeError)
