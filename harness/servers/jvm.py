"""Find a Java runtime for the servers and tools the harness runs on a JVM."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from .server_errors import ServerError

MINIMUM_JAVA = 17


@functools.cache
def find_java() -> str:
    """The ``java`` of ``$JAVA_HOME``, else the one on PATH; it must be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).is_file():
        raise ServerError(
            f"Java {MINIMUM_JAVA}+ is needed to run the harness's Java servers and tools (the "
            "embedded brokers among them); set JAVA_HOME or put java on PATH "
            "(Debian: apt-get install openjdk-17-jre-headless)"
        )
    output = subprocess.run(
        [java, "-version"], capture_output=True, text=True, timeout=30, check=False
    ).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    major = int(match.group(1)) if match else 0
    if major == 1 and match and match.group(2):  # "1.8.0_xxx"
        major = int(match.group(2))
    if major < MINIMUM_JAVA:
        raise ServerError(
            f"{java} is Java {major or '?'}; the harness's Java servers need Java {MINIMUM_JAVA}+"
        )
    return java
