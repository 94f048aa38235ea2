"""A confluent-kafka release of the user's choosing for Python apps, installed once and cached.

The harness itself (workload producer, recorders, checker) keeps its own pinned client; only the
app's processes see the chosen release, through ``PYTHONPATH``: the release is installed with
pip into a directory of its own (``--target``, wheel only, no dependencies: the wheel carries
librdkafka), which Python puts before the harness's site-packages. After the first time no
network is needed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_replay.file_lock import file_lock
from kafka_replay.servers.paths import cache_root

PYTHON_CLIENT = "confluent-kafka"
JVM_CLIENT = "kafka-clients"  # the JVM reference apps run on it (see kafka_replay.apps.jvm_apps)
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)==(?P<version>[0-9][0-9A-Za-z.+-]*)$")
INSTALL_TIMEOUT_S = 300
#: Written last: a directory without it is an install that did not finish.
COMPLETE = ".complete"


class ClientLibraryError(ValueError):
    """A client library that cannot be had: a bad spec, or a release PyPI does not have."""


def parse_client(spec: str) -> tuple[str, str]:
    """``confluent-kafka==2.6.0`` as ``("confluent-kafka", "2.6.0")``; anything else refused."""
    match = _SPEC.match(spec.strip())
    name = match["name"].lower().replace("_", "-") if match else None
    if match is None or name not in (PYTHON_CLIENT, JVM_CLIENT):
        raise ClientLibraryError(
            f"client library {spec!r}: give {PYTHON_CLIENT}==VERSION (the release Python apps "
            f"run with) or {JVM_CLIENT}==VERSION (the JVM reference apps, on that release)"
        )
    return name, match["version"]


def app_python_path(spec: str | None) -> Path | None:
    """What goes first on a Python app's ``PYTHONPATH`` for ``spec``: a confluent-kafka release."""
    if spec is None or parse_client(spec)[0] != PYTHON_CLIENT:
        return None
    return python_client_path(spec)


def python_client_path(spec: str) -> Path:
    """The directory to put on the app's ``PYTHONPATH``, installing the release the first time."""
    name, version = parse_client(spec)
    if name != PYTHON_CLIENT:
        raise ClientLibraryError(f"{spec} is not a Python client release")
    target = cache_root() / "clients" / f"{name}-{version}"
    if (target / COMPLETE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f"{target.name}.lock"):
        if (target / COMPLETE).is_file():  # another process finished meanwhile
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            _pip_install(f"{name}=={version}", staging)
            (staging / COMPLETE).write_text(f"{name}=={version}\n")
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _pip_install(requirement: str, target: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--target",
        str(target),
        requirement,
    ]
    try:
        subprocess.run(
            command, capture_output=True, text=True, check=True, timeout=INSTALL_TIMEOUT_S
        )
    except subprocess.CalledProcessError as exc:
        lines = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise ClientLibraryError(
            f"{requirement} could not be installed from PyPI for Python "
            f"{sys.version_info.major}.{sys.version_info.minor}: "
            f"{lines[-1] if lines else f'pip exited with {exc.returncode}'}"
        ) from None
    except subprocess.TimeoutExpired:
        raise ClientLibraryError(
            f"{requirement} was not installed within {INSTALL_TIMEOUT_S}s: is PyPI reachable?"
        ) from None
