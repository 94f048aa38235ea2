"""Apache Flink from Maven Central: the classpath ``flink run`` needs, a local cluster's
settings, and the checkpoints a restart restores from. One place for every use of Flink.

Flink's distribution and its ``bin/`` scripts are not on Maven Central, so a job runs as
``flink run --target local`` does it (``CliFrontend``): a MiniCluster (JobManager and
TaskManager) in the job's own JVM, started for the job and gone with it. Every listener it
opens (the REST endpoint and the BLOB server; RPC and data exchange stay in the JVM) is on
127.0.0.1. Checkpoints go to a directory the caller keeps across restarts and are retained
when the job ends, so a job killed and started again resumes from its last completed
checkpoint, as a deployment without high availability resubmits it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafka_replay.file_lock import file_lock
from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.maven import Artifact, resolve_classpath

from .jvm_apps import compiled_apps

#: The Flink release a job runs on unless told otherwise (``--version``).
FLINK_VERSION = "2.2.1"
#: Flink's Kafka connector for that release: the newest, built for Flink 2.2.
KAFKA_CONNECTOR = "org.apache.flink:flink-connector-kafka:5.0.0-2.2"
#: A job and its MiniCluster on the 2-core machine (about 290 MB resident with a small job).
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx384m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
)
#: What Flink's own scripts open to it on Java 17 (``env.java.opts.all`` of its config.yaml).
OPENS = tuple(
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in (
        "java.lang",
        "java.net",
        "java.io",
        "java.nio",
        "sun.nio.ch",
        "java.lang.reflect",
        "java.text",
        "java.time",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "java.util.concurrent.locks",
    )
)
#: The job's log on the app's output, with times; Kafka's clients at WARN (their INFO repeats
#: every client's whole config).
LOGGING = (
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss,SSS",
    "-Dorg.slf4j.simpleLogger.logFile=System.out",
    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka=warn",
    "-Dorg.slf4j.simpleLogger.log.org.apache.flink.metrics=error",
)
CLI = "org.apache.flink.client.cli.CliFrontend"
#: Where a definition's reference jobs are, beside it; in its command, ``{flink_job}`` is
#: their jar.
SOURCES = Path("apps") / "flink"
FLINK_JOB = "{flink_job}"
#: A completed checkpoint's last file: a ``chk-N`` directory without it is unfinished.
METADATA = "_metadata"


class FlinkError(RuntimeError):
    """A job that cannot be run: a bad argument, a jar that is not there, sources that do not
    compile."""


def flink_classpath(version: str = FLINK_VERSION) -> list[Path]:
    """What ``flink run`` needs of Flink ``version`` (its streaming API, client, connector
    base and a logging backend), resolved from Maven Central on first use."""
    return resolve_classpath(
        f"flink-{version}",
        [
            Artifact("org.apache.flink", "flink-streaming-java", version),
            Artifact("org.apache.flink", "flink-clients", version),
            Artifact("org.apache.flink", "flink-connector-base", version),
            Artifact("org.slf4j", "slf4j-simple", "1.7.36"),
        ],
    )


def user_jars(coordinates: str, version: str = FLINK_VERSION) -> list[Path]:
    """The jars of ``group:artifact:version`` (a connector a job's jar does not carry) that
    Flink itself does not bring: what ``flink run --classpath`` adds to the job's own."""
    parts = coordinates.split(":")
    if len(parts) != 3 or not all(parts):
        raise FlinkError(
            f"--with {coordinates!r}: expected Maven coordinates group:artifact:version"
        )
    jars = resolve_classpath("flink-job-" + coordinates.replace(":", "_"), [Artifact(*parts)])
    flink = {jar.name for jar in flink_classpath(version)}
    return [jar for jar in jars if jar.name not in flink]


def cluster_config(checkpoints: Path, scratch: Path, settings: Mapping[str, str]) -> dict[str, str]:
    """A local cluster's settings: every listener on 127.0.0.1 on a free port; a checkpoint
    every second into ``checkpoints``, kept when the job ends; its other files (BLOBs, spills)
    in ``scratch``, not the machine's temporary directory; no restarts inside the JVM (a
    failed job ends the process and its supervisor starts it again from the last checkpoint,
    as a deployment would); then the team's own ``settings``."""
    config = {
        "io.tmp.dirs": str(scratch.resolve()),
        "rest.bind-address": "127.0.0.1",
        "rest.address": "127.0.0.1",
        "rest.bind-port": "0",
        "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.rpc.address": "127.0.0.1",
        "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.host": "127.0.0.1",
        "blob.server.port": "0",
        "parallelism.default": "1",
        "execution.checkpointing.interval": "1s",
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": checkpoints.resolve().as_uri(),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": "1",
        "state.backend.type": "hashmap",
        "restart-strategy.type": "none",
    }
    config.update(settings)
    return config


def write_config(conf_dir: Path, config: Mapping[str, str]) -> Path:
    """``conf_dir/config.yaml`` (what Flink reads from ``FLINK_CONF_DIR``), one flat key a
    line, each value a quoted string."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "config.yaml"
    path.write_text("".join(f"{key}: {json.dumps(str(value))}\n" for key, value in config.items()))
    return path


def newest_checkpoint(checkpoints: Path, since: float = 0.0) -> Path | None:
    """The last completed checkpoint under ``checkpoints`` (``JOB_ID/chk-N`` holding its
    metadata; each run of the job has a job id of its own), of those completed at or after
    ``since`` (Unix seconds), or None before the first."""
    completed = []
    for meta in checkpoints.glob(f"*/chk-*/{METADATA}"):
        with contextlib.suppress(OSError):  # a retained one replaced as we look
            completed.append((meta.stat().st_mtime, meta.parent))
    return max((c for c in completed if c[0] >= since), default=(0.0, None))[1]


def run_command(
    *,
    classpath: Sequence[Path],
    main_class: str | None,
    jar: Path,
    extra_jars: Sequence[Path] = (),
    restore: Path | None = None,
    arguments: Sequence[str] = (),
    scratch: Path | None = None,
    target: str = "local",
) -> list[str]:
    """``flink run --target TARGET`` as one ``java`` command line: the job's ``jar`` (its
    ``main_class``, else the jar's manifest's), ``extra_jars`` on the job's classpath, resumed
    from ``restore``, its temporary files in ``scratch``. ``local``: on a MiniCluster in this
    JVM; ``remote``: submitted to the session cluster the settings' REST address names, the
    command lasting as long as the job."""
    command = [find_java(), *JVM_OPTIONS, *OPENS, *LOGGING]
    if scratch is not None:
        command.append(f"-Djava.io.tmpdir={scratch.resolve()}")
    command += ["-cp", ":".join(map(str, classpath))]
    command += [CLI, "run", "--target", target]
    if main_class:
        command += ["--class", main_class]
    for extra in extra_jars:
        command += ["--classpath", extra.resolve().as_uri()]
    if restore is not None:
        command += ["--fromSavepoint", str(restore)]
    return [*command, str(jar), *arguments]


def reference_job_jar(definition_dir: Path, version: str = FLINK_VERSION) -> Path:
    """What ``{flink_job}`` stands for: the jar of ``apps/flink/*.java`` beside a definition,
    compiled against Flink ``version`` and carrying its Kafka connector, as a team's build
    shades it into a job's jar (cached per content of the sources)."""
    sources = definition_dir / SOURCES
    connector = user_jars(KAFKA_CONNECTOR, version)
    classes = compiled_apps(sources, [*flink_classpath(version), *connector], f"flink-{version}")
    jar = classes.with_name(classes.name + ".jar")
    if not jar.is_file():
        with file_lock(jar.with_name(jar.name + ".lock")):
            if not jar.is_file():
                _write_jar(classes, connector, jar)
    return jar


def _write_jar(classes: Path, bundled: Sequence[Path], jar: Path) -> None:
    """A jar of the ``.class`` files under ``classes`` and of every entry of ``bundled`` (the
    first of each name; no manifests or signatures), written aside, then moved in place."""
    descriptor, staging_name = tempfile.mkstemp(prefix=f".{jar.name}-", dir=jar.parent)
    staging = Path(staging_name)
    try:
        with (
            os.fdopen(descriptor, "wb") as file,
            zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive,
        ):
            archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
            written = set(archive.namelist())
            for library in bundled:
                with zipfile.ZipFile(library) as source:
                    for entry in source.infolist():
                        name = entry.filename
                        if name in written or entry.is_dir() or _unbundled(name):
                            continue
                        archive.writestr(entry, source.read(entry))
                        written.add(name)
        staging.rename(jar)
    finally:
        staging.unlink(missing_ok=True)


def _unbundled(name: str) -> bool:
    """A library's manifest and signatures stay out of a job's jar (as a shading build does)."""
    upper = name.upper()
    return upper == "META-INF/MANIFEST.MF" or (
        upper.startswith("META-INF/") and upper.endswith((".SF", ".RSA", ".DSA"))
    )
