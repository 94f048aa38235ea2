"""JVM reference apps: Java sources beside an incident, compiled against a kafka-clients release.

A definition's ``[app] jvm`` command starts with ``{java}``; it expands to ``java`` with a
classpath of the compiled ``apps/jvm/*.java`` found beside the definition file and the chosen
kafka-clients release from Maven Central, plus PostgreSQL's JDBC driver when the sources use
JDBC (``java.sql``: an app writing to the run's database). Jars and classes are cached (classes
per release and per content of the sources), so only the first run of a release needs the
network and javac.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_replay.file_lock import file_lock
from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.maven import Artifact, resolve_classpath
from kafka_replay.servers.paths import cache_root

JAVA_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
COMPILE_TIMEOUT_S = 180
SOURCES = Path("apps") / "jvm"


class JvmAppError(ValueError):
    """The JVM reference app cannot be had: no sources, or they do not compile."""


def kafka_clients_classpath(version: str) -> list[Path]:
    """kafka-clients ``version`` and what it needs, resolved from Maven Central once."""
    return resolve_classpath(
        f"kafka-clients-{version}", [Artifact("org.apache.kafka", "kafka-clients", version)]
    )


def database_drivers(sources: Path) -> list[Path]:
    """PostgreSQL's JDBC driver when the apps in ``sources`` use JDBC, else nothing: only
    then is it fetched (once, from Maven Central)."""
    if not any("java.sql" in path.read_text() for path in sources.glob("*.java")):
        return []
    from kafka_replay.sinks.database import postgres_jdbc_jar  # psycopg: only if used

    return [postgres_jdbc_jar()]


def java_command(definition_dir: Path, version: str) -> str:
    """What ``{java}`` stands for: ``java <options> -cp <classes>:<jars>``, shell-quoted."""
    sources = definition_dir / SOURCES
    jars = [*kafka_clients_classpath(version), *database_drivers(sources)]
    classes = compiled_apps(sources, jars, f"kafka-clients-{version}")
    classpath = ":".join([str(classes), *(str(jar) for jar in jars)])
    return shlex.join([find_java(), *JAVA_OPTIONS, "-cp", classpath])


def compiled_apps(sources: Path, jars: list[Path], label: str) -> Path:
    """The classes of ``sources/*.java`` compiled against ``jars`` (``label`` names them, e.g.
    the release they were compiled for), compiled the first time."""
    files = sorted(sources.glob("*.java"))
    if not files:
        raise JvmAppError(f"no JVM reference app: {sources} has no .java files")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    target = cache_root() / "jvm-apps" / f"{digest.hexdigest()[:16]}-{label}"
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f"{target.name}.lock"):
        if (target / ".complete").is_file():
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            _javac(files, jars, staging)
            (staging / ".complete").write_text("\n".join(str(f) for f in files) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _javac(files: list[Path], jars: list[Path], output: Path) -> None:
    javac = Path(find_java()).resolve().with_name("javac")
    if not javac.is_file():
        found = shutil.which("javac")
        if found is None:
            raise JvmAppError("javac (a JDK 17+) is needed once to compile the JVM reference apps")
        javac = Path(found)
    command = [str(javac), "-nowarn", "-cp", ":".join(str(j) for j in jars), "-d", str(output)]
    result = subprocess.run(
        [*command, *(str(f) for f in files)],
        capture_output=True,
        text=True,
        timeout=COMPILE_TIMEOUT_S,
    )
    if result.returncode != 0:
        errors = (result.stderr or result.stdout).strip().splitlines()[:20]
        raise JvmAppError(
            f"the JVM reference apps in {files[0].parent} did not compile:\n" + "\n".join(errors)
        )
