"""Resolve Java classpaths from Maven Central once, then serve them from the user's cache.

Maven itself does the resolving, so a user's ``settings.xml`` (mirrors, proxies, credentials)
applies. The result is a directory of jars and a ``classpath.txt`` written last: a cache entry
with that file is complete, and reading it never touches the network.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from kafka_replay.file_lock import file_lock

from .paths import cache_root
from .process import run_tool
from .server_errors import ArtifactResolutionError

log = logging.getLogger(__name__)

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MAVEN_TIMEOUT_S = 900


@dataclass(frozen=True)
class Artifact:
    """A Maven coordinate plus the transitive artifacts to leave out of it."""

    group: str
    name: str
    version: str
    exclude: tuple[str, ...] = field(default=())  # "group:artifact"

    def pom_xml(self) -> str:
        exclusions = "".join(
            "<exclusion><groupId>{}</groupId><artifactId>{}</artifactId></exclusion>".format(
                *map(escape, excluded.split(":", 1))
            )
            for excluded in self.exclude
        )
        return (
            f"<dependency><groupId>{escape(self.group)}</groupId>"
            f"<artifactId>{escape(self.name)}</artifactId><version>{escape(self.version)}</version>"
            f"<exclusions>{exclusions}</exclusions></dependency>"
        )


def cached_classpath(name: str) -> list[Path] | None:
    """The jars :func:`resolve_classpath` cached under ``name``, if it has (no network)."""
    return _read_classpath(cache_root() / "artifacts" / name)


def resolve_classpath(name: str, artifacts: Sequence[Artifact]) -> list[Path]:
    """Jars for ``artifacts`` and everything they need, cached under ``name``."""
    target = cache_root() / "artifacts" / name
    cached = _read_classpath(target)
    if cached is not None:
        return cached
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f"{name}.lock"):
        cached = _read_classpath(target)  # another process may have finished meanwhile
        if cached is not None:
            return cached
        log.warning("Resolving %s from Maven (first use; cached in %s)", name, target)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
        try:
            _run_maven(staging, artifacts)
            jars = sorted(p.name for p in (staging / "libs").glob("*.jar"))
            if not jars:
                raise ArtifactResolutionError(f"Maven resolved no jars for {name}")
            (staging / "classpath.txt").write_text("\n".join(f"libs/{j}" for j in jars) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    cached = _read_classpath(target)
    assert cached is not None
    return cached


def _read_classpath(target: Path) -> list[Path] | None:
    listing = target / "classpath.txt"
    if not listing.is_file():
        return None
    jars = [target / line for line in listing.read_text().split() if line]
    if not all(jar.is_file() for jar in jars):
        return None  # damaged cache entry: resolve again
    return jars


def _run_maven(workdir: Path, artifacts: Sequence[Artifact]) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ArtifactResolutionError(
            "Maven (mvn) is needed to fetch Java artifacts (a Kafka release's broker, Spark's "
            "connector, the apps' clients) from Maven Central once; they are cached after. "
            "Install it (Debian: apt-get install maven) or put it on PATH."
        )
    pom = workdir / "pom.xml"
    pom.write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kafka-replay</groupId><artifactId>classpath</artifactId><version>1</version>"
        "<packaging>pom</packaging><dependencies>"
        + "".join(a.pom_xml() for a in artifacts)
        + "</dependencies></project>"
    )
    command = [
        mvn,
        "-B",
        "-q",
        "-Dstyle.color=never",
        "-f",
        str(pom),
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={workdir / 'libs'}",
        "-DincludeScope=runtime",
    ]
    coordinates = ", ".join(f"{a.group}:{a.name}:{a.version}" for a in artifacts)
    run_tool(
        command,
        f"Maven resolving {coordinates}",
        ArtifactResolutionError,
        MAVEN_TIMEOUT_S,
        tail_lines=25,
    )


def maven_jars(coordinates: list[str]) -> list[Path]:
    """Jars for ``group:artifact:version`` coordinates (a JDBC driver, say), cached."""
    artifacts = []
    for coordinate in coordinates:
        parts = coordinate.split(":")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"{coordinate!r} is not a Maven coordinate group:artifact:version")
        artifacts.append(Artifact(*parts))
    if not artifacts:
        return []
    return resolve_classpath(
        "spark-extra-" + "-".join(sorted(c.replace(":", "_") for c in coordinates)), artifacts
    )


def jdbc_driver_class(jars: list[Path]) -> str | None:
    """The JDBC driver a jar registers (``META-INF/services/java.sql.Driver``), if any."""
    for jar in jars:
        with zipfile.ZipFile(jar) as archive:
            try:
                text = archive.read("META-INF/services/java.sql.Driver").decode()
            except KeyError:
                continue
        names = [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
        if names:
            return names[0]
    return None
