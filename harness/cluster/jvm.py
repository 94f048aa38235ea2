"""Find Java and launch JVM processes that cannot outlive the harness."""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from .errors import ClusterError

MINIMUM_JAVA = 17
_PR_SET_PDEATHSIG = 1


@functools.cache
def find_java() -> str:
    """The ``java`` of ``$JAVA_HOME``, else the one on PATH; it must be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).is_file():
        raise ClusterError(
            f"Java {MINIMUM_JAVA}+ is needed to run the embedded Kafka broker; set JAVA_HOME "
            "or put java on PATH (Debian: apt-get install openjdk-17-jre-headless)"
        )
    output = subprocess.run(
        [java, "-version"], capture_output=True, text=True, timeout=30, check=False
    ).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    major = int(match.group(1)) if match else 0
    if major == 1 and match and match.group(2):  # "1.8.0_xxx"
        major = int(match.group(2))
    if major < MINIMUM_JAVA:
        raise ClusterError(f"{java} is Java {major or '?'}; Kafka needs Java {MINIMUM_JAVA}+")
    return java


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGKILL the child when its parent thread exits.

    Only used from the main thread: the signal follows the thread that forked, so a cluster
    started from a worker thread would otherwise die with that thread.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    if not sys.platform.startswith("linux") or not in_main_thread:
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return hook


def spawn(
    command: Sequence[str],
    output: IO[bytes],
    *,
    die_with_owner: bool = True,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own session with stdout and stderr going to ``output``.

    Its own session keeps a Ctrl-C in the terminal from killing it before the harness has
    stopped it in order; ``die_with_owner`` makes a kill -9 of the harness take it along.
    """
    return subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=_die_with_parent() if die_with_owner else None,
    )
