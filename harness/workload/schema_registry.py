"""A real schema registry with Confluent's API, started on loopback like a broker.

Apps that read Confluent's wire format look each schema up by id in a registry, so a replay of
their traffic needs one that answers like Confluent's. Apicurio Registry serves that API under
``/apis/ccompat/v7``, is Apache-licensed and on Maven Central, and keeps its data in an
in-memory H2 database, so it needs neither Kafka nor a network. It needs Java 21+, which may
not be the Java the brokers run on: :func:`find_java21` looks for one.

Start-up, from :meth:`SchemaRegistry.start` to the first 200 from ``/subjects``, with Temurin 25
on the 2-core machine and the app already unpacked: the median of 3 starts was 3.0 to 3.5 s
(three sets: 2.96, 3.10 and 3.48 s) with the machine nearly idle, and 5.8 s while a broker test
run shared its cores.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import struct
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_replay.file_lock import file_lock
from kafka_replay.servers.lifecycle import Server
from kafka_replay.servers.maven import Artifact, _run_maven
from kafka_replay.servers.paths import cache_root
from kafka_replay.servers.ports import free_ports
from kafka_replay.servers.process import stop_process, wait_answering
from kafka_replay.servers.reaper import Lease, reap_orphans
from kafka_replay.servers.server_log import ServerLog

log = logging.getLogger(__name__)

VERSION = "3.3.3"
MINIMUM_JAVA = 21
JAVA_HOME_ENV = "REPLAY_REGISTRY_JAVA_HOME"
JVM_ROOT = Path("/usr/lib/jvm")
READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
HTTP_TIMEOUT_S = 5.0
#: Confluent's content type; Apicurio's ccompat API also takes plain JSON.
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
#: A registry here lives minutes and serves a few look-ups: with the C1 compiler alone it
#: answers about 0.9 s sooner (3.1 s against 4.0 s, median of 3). An exhausted heap ends it
#: rather than leaving it half alive. Apicurio's settings: :meth:`SchemaRegistry._command`.
JVM_OPTIONS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError")
#: What a failed bind says in the log: the ports were taken meanwhile, so start again.
_PORT_TAKEN = re.compile(r"Port \d+ seems to be in use|Address already in use")


class RegistryError(RuntimeError):
    """The registry could not be fetched, started or asked; the message says why."""


@dataclass(frozen=True)
class _Packaged(Artifact):
    """An artifact that is an archive, not a jar, and brings nothing else with it."""

    packaging: str = "tar.gz"
    classifier: str = "all"

    def pom_xml(self) -> str:
        extra = f"<type>{self.packaging}</type><classifier>{self.classifier}</classifier>"
        return super().pom_xml().replace("</version>", "</version>" + extra, 1)


APP = _Packaged("io.apicurio", "apicurio-registry-app", VERSION, exclude=("*:*",))


def _java_major(java: Path) -> int:
    """The major version ``java -version`` reports; 0 where it cannot be run."""
    try:
        output = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if not match:
        return 0
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0_xxx"


def _candidates() -> Iterator[Path]:
    """Java homes in the order they are preferred; ``/usr/lib/jvm``'s come newest first."""
    for variable in (JAVA_HOME_ENV, "JAVA_HOME"):
        if home := os.environ.get(variable):
            yield Path(home) / "bin" / "java"
    if on_path := shutil.which("java"):
        yield Path(on_path)
    installed = {p.resolve() for p in JVM_ROOT.glob("*/bin/java")} if JVM_ROOT.is_dir() else set()
    yield from sorted(installed, key=_java_major, reverse=True)


@functools.cache
def find_java21() -> Path | None:
    """A ``java`` of :data:`MINIMUM_JAVA` or newer, else None (cached for the process)."""
    return next((java for java in _candidates() if _java_major(java) >= MINIMUM_JAVA), None)


def registry_unavailable() -> str | None:
    """Why a registry cannot start on this machine, or None when it can."""
    if find_java21() is not None:
        return None
    return (
        f"Apicurio Registry needs Java {MINIMUM_JAVA}+ and none was found in "
        f"${JAVA_HOME_ENV}, $JAVA_HOME, on PATH or in {JVM_ROOT}; install a JDK "
        f"{MINIMUM_JAVA}+ or set {JAVA_HOME_ENV} to one's home directory"
    )


def fetch_registry() -> Path:
    """The unpacked app (the folder holding ``quarkus-run.jar``), fetched once into the cache."""
    target = cache_root() / "apicurio-registry" / VERSION
    done = target / ".unpacked"
    if done.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f"{VERSION}.lock"):
        if done.is_file():  # another worker finished meanwhile
            return target
        log.warning("Fetching Apicurio Registry %s from Maven (first use; in %s)", VERSION, target)
        staging = Path(tempfile.mkdtemp(prefix=f".{VERSION}-", dir=target.parent))
        try:
            _run_maven(staging, [APP])
            archives = list((staging / "libs").glob("*.tar.gz"))
            if len(archives) != 1:
                raise RegistryError(f"Maven brought {len(archives)} archives for {APP.name}")
            with tarfile.open(archives[0]) as archive:
                archive.extractall(staging / "app", filter="data")
            if not (staging / "app" / "quarkus-run.jar").is_file():
                raise RegistryError(f"{archives[0].name} has no quarkus-run.jar")
            (staging / "app" / ".unpacked").write_text(VERSION + "\n")
            shutil.rmtree(target, ignore_errors=True)
            (staging / "app").rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def frame(schema_id: int, payload: bytes) -> bytes:
    """``payload`` in Confluent's wire format: magic byte 0, the schema id as 4 big-endian
    bytes, then the serialised value."""
    return b"\x00" + struct.pack(">I", schema_id) + payload


class SchemaRegistry(Server):
    """One Apicurio Registry JVM on loopback; a context manager, or :meth:`start` and
    :meth:`stop`. Its process is leased, so a crashed run's registry is reaped like a broker."""

    def __init__(
        self,
        log_dir: Path,
        *,
        jvm_options: Sequence[str] = (),
        app_dir: Path | None = None,
        die_with_owner: bool = True,
    ) -> None:
        self.log_path = Path(log_dir) / "schema-registry.log"
        #: Its JVM's temporary files (the native libraries it unpacks at start), here rather
        #: than in the machine's /tmp, where a killed JVM would leave them.
        self.scratch = Path(log_dir) / "schema-registry-tmp"
        self.jvm_options = list(jvm_options)
        self.app_dir = app_dir
        self.die_with_owner = die_with_owner
        self.process: subprocess.Popen[bytes] | None = None
        self.lease: Lease | None = None
        self.port = 0
        self._log = ServerLog(self.log_path)

    @property
    def url(self) -> str:
        """What ``SchemaRegistryClient({"url": ...})`` takes."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def start(self, timeout: float = READY_TIMEOUT_S) -> SchemaRegistry:
        """Launch the JVM and wait until the API answers; fresh ports if ours were taken."""
        if self.process is not None and self.process.poll() is None:
            raise RegistryError("this registry is already running")
        if (reason := registry_unavailable()) is not None:
            raise RegistryError(reason)
        app_dir = self.app_dir or fetch_registry()
        if not app_dir.is_dir():
            raise RegistryError(f"no Apicurio Registry app in {app_dir}: it is not a directory")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        reap_orphans()
        self.lease = Lease.take()
        for attempt in range(3):
            try:
                self._launch(app_dir, timeout)
                return self
            except BaseException as exc:  # a Ctrl-C while it starts too: no JVM is left
                self.stop()
                taken = _PORT_TAKEN.search(self._log.since_start())
                retry = isinstance(exc, RegistryError) and taken
                if not retry or attempt == 2:
                    raise
                self.lease = Lease.take()
        raise AssertionError("unreachable")

    def _launch(self, app_dir: Path, timeout: float) -> None:
        self.port, management_port = free_ports(2)
        command = self._command(management_port)
        assert self.lease is not None
        shutil.rmtree(self.scratch, ignore_errors=True)  # a killed start's
        self.scratch.mkdir(parents=True)
        self._log.begin()
        self.process = self._log.spawn(
            command, self.lease, die_with_owner=self.die_with_owner, cwd=app_dir
        )
        if (why := wait_answering(self._answers, self.process.poll, timeout)) is not None:
            raise RegistryError(self._failure(why))

    def _command(self, management_port: int) -> list[str]:
        java = find_java21()
        assert java is not None
        settings = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": self.port,
            # the health and metrics interface is built in: off its default 0.0.0.0:9000
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": management_port,
            # in-memory H2, whatever APICURIO_* variables the environment carries
            "apicurio.storage.kind": "sql",
            "apicurio.storage.sql.kind": "h2",
            "apicurio.datasource.url": "jdbc:h2:mem:registry",
            # no authentication: no OIDC server to discover; no OpenTelemetry export
            "quarkus.oidc.tenant-enabled": "false",
            "quarkus.otel.sdk.disabled": "true",
            "apicurio.usage.telemetry.enabled": "false",
        }
        properties = [f"-D{key}={value}" for key, value in settings.items()]
        return [
            str(java),
            *JVM_OPTIONS,
            f"-Djava.io.tmpdir={self.scratch.resolve()}",
            *properties,
            *self.jvm_options,
            "-jar",
            "quarkus-run.jar",
        ]

    def _answers(self) -> bool:
        try:
            self._call("GET", "/subjects")
            return True
        except RegistryError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        return self._log.tail(lines)

    def _failure(self, what: str) -> str:
        return self._log.failure(f"the schema registry on 127.0.0.1:{self.port} {what}")

    def register(self, subject: str, schema_text: str, schema_type: str = "AVRO") -> int:
        """Register a schema under ``subject`` (a new version, or the same id if it is known)
        and return the id that framed values carry."""
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions"
        answer = self._call("POST", path, {"schema": schema_text, "schemaType": schema_type})
        return int(answer["id"])

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
        try:
            with opener.open(request, timeout=HTTP_TIMEOUT_S) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()
            raise RegistryError(f"the registry refused {method} {path}: {detail}") from exc
        except OSError as exc:
            raise RegistryError(f"the registry did not answer {method} {path}: {exc}") from exc

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; safe to call twice."""
        if stop_process(self.process, grace):
            log.warning("the schema registry ignored SIGTERM for %.0fs; it was killed", grace)
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.lease is not None:
            self.lease.release()
            self.lease = None
