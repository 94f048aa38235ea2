"""Kafka images for the container backend, including where no image registry can be reached.

Preference order: an image named by the user; this machine's ``kafka-replay/kafka:<version>``;
the official ``apache/kafka:<version>`` (local, else pulled); else a local image is built:
a Debian root filesystem made with debootstrap, a Java 17 runtime from apt, and the same
Maven Central jars the embedded backend runs. Building a tag that exists is a no-op.
The Debian base, the build lock and :func:`docker_build` serve the run database's PostgreSQL
image too (:mod:`kafka_replay.sinks.postgres_image`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from .artifacts import file_lock, kafka_classpath
from .embedded import JVM_OPTIONS, broker_class_list
from .errors import ClusterError
from .paths import cache_root

log = logging.getLogger(__name__)

LOCAL_REPOSITORY = "kafka-replay/kafka"
OFFICIAL_REPOSITORY = "apache/kafka"
DEBIAN_IMAGE = "kafka-replay/debian:bookworm"
JAVA_IMAGE = "kafka-replay/jre17:bookworm"
IMAGE_LABEL = "kafka-replay.image"
MIRROR_ENV = "KAFKA_REPLAY_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"

Progress = Callable[[str], None]

JAVA_DOCKERFILE = f"""\
FROM {DEBIAN_IMAGE}
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      openjdk-17-jre-headless >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
"""

#: The class-data archive is dumped by the image's own Java from the class list the embedded
#: backend recorded, with the entrypoint's options (an archive must match the JVM that maps it).
KAFKA_DOCKERFILE = f"""\
FROM {JAVA_IMAGE}
COPY libs /opt/kafka/libs
COPY log4j2.properties entrypoint.sh classpath jvm-options classes.lst /opt/kafka/
RUN if [ -s /opt/kafka/classes.lst ]; then \\
      java -Xshare:dump -XX:SharedClassListFile=/opt/kafka/classes.lst \\
        -XX:SharedArchiveFile=/opt/kafka/kafka.jsa $(cat /opt/kafka/jvm-options) -Xmx768m \\
        -cp "$(cat /opt/kafka/classpath)" >/dev/null; \\
    fi
ENTRYPOINT ["/opt/kafka/entrypoint.sh"]
"""
#: Bumped by what the image holds: an older local image is rebuilt rather than reused.
RECIPE_LABEL = "kafka-replay.recipe"


class DockerUnavailable(ClusterError):
    """No Docker daemon answers; the message says how to get one."""


def docker_client() -> Any:
    """A client of a Docker daemon that answers, or :class:`DockerUnavailable`."""
    try:
        import docker
    except ImportError:
        raise DockerUnavailable(
            "the container backend needs testcontainers and the Docker SDK: "
            "pip install 'kafka-replay[container]'"
        ) from None

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:
        raise DockerUnavailable(
            "no Docker daemon is reachable (" + str(exc).split("\n")[0] + "). Start one (on "
            "Debian: apt-get install docker.io && dockerd --bridge=none --iptables=false &) "
            "or use the embedded backend."
        ) from exc
    return client


def docker_unavailable() -> str | None:
    """Why no container can start here (no Docker daemon answers), or None."""
    try:
        docker_client()
    except DockerUnavailable as exc:
        return str(exc)
    return None


def local_image(version: str) -> str:
    return f"{LOCAL_REPOSITORY}:{version}"


def official_image(version: str) -> str:
    return f"{OFFICIAL_REPOSITORY}:{version}"


def image_exists(client: Any, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def resolve_image(version: str, image: str | None = None, progress: Progress = log.warning) -> str:
    """The image to run Kafka ``version`` from, pulling or building one if needed."""
    client = docker_client()
    if image:
        if not image_exists(client, image):
            _pull(client, image)
        return image
    if image_current(client, local_image(version)):
        return local_image(version)
    if image_exists(client, official_image(version)):
        return official_image(version)
    try:
        _pull(client, official_image(version))
        return official_image(version)
    except ClusterError as exc:
        progress(f"{exc}; building {local_image(version)} locally instead")
    return build_kafka_image(version, progress)


def _pull(client: Any, tag: str) -> None:
    import docker

    repository, _, version = tag.partition(":")
    try:
        client.images.pull(repository, tag=version or "latest")
    except docker.errors.DockerException as exc:
        reason = str(exc).split("\n")[0]
        raise ClusterError(f"cannot pull {tag}: {reason}") from exc


def build_kafka_image(version: str, progress: Progress = log.warning) -> str:
    """Build ``kafka-replay/kafka:<version>`` (a no-op when it exists); return its tag."""
    client = docker_client()
    tag = local_image(version)
    if image_current(client, tag):
        return tag
    with build_lock():
        if not image_current(client, tag):
            _build_kafka_image(client, version, tag, progress)
    return tag


@contextmanager
def build_lock() -> Iterator[None]:
    """Held while a local image is built: parallel test workers and runs must not build the
    same image twice, nor make the Debian root filesystem that every local image starts from."""
    lock = cache_root() / "artifacts" / "image-build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(lock):
        yield


def recipe() -> str:
    """What a local Kafka image is made of, as a short digest."""
    bundled = resources.files("kafka_replay.cluster") / "resources" / "entrypoint.sh"
    text = KAFKA_DOCKERFILE + bundled.read_text() + " ".join(JVM_OPTIONS)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def image_current(client: Any, tag: str) -> bool:
    """The local image exists and was built by this recipe."""
    return built_by(client, tag, recipe())


def built_by(client: Any, tag: str, digest: str) -> bool:
    """The image ``tag`` exists and its recipe label is ``digest``."""
    import docker

    try:
        labels = client.images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        return False
    return labels.get(RECIPE_LABEL) == digest


def _build_kafka_image(client: Any, version: str, tag: str, progress: Progress) -> None:
    _build_java_image(client, progress)
    jars = kafka_classpath(version)
    with tempfile.TemporaryDirectory(prefix="kafka-replay-image-") as context:
        root = Path(context)
        (root / "libs").mkdir()
        for jar in jars:
            shutil.copy2(jar, root / "libs" / jar.name)
        bundled = resources.files("kafka_replay.cluster") / "resources"
        for name in ("log4j2.properties", "entrypoint.sh"):
            (root / name).write_bytes((bundled / name).read_bytes())
        (root / "entrypoint.sh").chmod(0o755)
        (root / "classpath").write_text(":".join(f"/opt/kafka/libs/{jar.name}" for jar in jars))
        (root / "jvm-options").write_text(" ".join(JVM_OPTIONS) + "\n")
        classes = broker_class_list(version)
        (root / "classes.lst").write_bytes(classes.read_bytes() if classes else b"")
        (root / "Dockerfile").write_text(KAFKA_DOCKERFILE)
        progress(f"Building {tag} from {len(jars)} Maven Central jars")
        labels = {IMAGE_LABEL: "kafka", "kafka.version": version, RECIPE_LABEL: recipe()}
        docker_build(client, root, tag, labels)


def _build_java_image(client: Any, progress: Progress) -> None:
    if image_exists(client, JAVA_IMAGE):
        return
    debian_base(client, progress)
    with tempfile.TemporaryDirectory(prefix="kafka-replay-image-") as context:
        (Path(context) / "Dockerfile").write_text(JAVA_DOCKERFILE)
        progress(f"Building {JAVA_IMAGE}: Java 17 from Debian's packages")
        docker_build(client, Path(context), JAVA_IMAGE, {IMAGE_LABEL: "java"})


def debian_base(client: Any, progress: Progress) -> str:
    """:data:`DEBIAN_IMAGE`, the base of every local image, made from a debootstrap root
    filesystem when missing (never pulled); call it under :func:`build_lock`."""
    if not image_exists(client, DEBIAN_IMAGE):
        _import_debian_rootfs(client, progress)
    return DEBIAN_IMAGE


def _import_debian_rootfs(client: Any, progress: Progress) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        raise ClusterError(
            f"building a local image without a registry starts from {DEBIAN_IMAGE}, which "
            "needs debootstrap, run as root (Debian: apt-get install debootstrap); for Kafka, "
            "pull apache/kafka instead where a registry is reachable"
        )
    mirror = debian_mirror()
    with tempfile.TemporaryDirectory(prefix="kafka-replay-rootfs-") as work:
        rootfs = Path(work) / "rootfs"
        progress(f"Making a Debian bookworm root filesystem with debootstrap from {mirror}")
        started = time.monotonic()
        result = subprocess.run(
            [debootstrap, "--variant=minbase", "bookworm", str(rootfs), mirror],
            capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
            raise ClusterError(f"debootstrap failed (exit {result.returncode}):\n{tail}")
        archive = Path(work) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(rootfs, arcname=".")
        repository, _, tag = DEBIAN_IMAGE.partition(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=tag)
        progress(f"Imported {DEBIAN_IMAGE} in {time.monotonic() - started:.0f}s")


def docker_build(client: Any, context: Path, tag: str, labels: dict[str, str]) -> None:
    """``docker build`` of ``context`` on the host's network (no bridge), from local images
    only: a failure is a :class:`ClusterError` ending with the build's last lines."""
    import docker

    try:
        client.images.build(
            path=str(context),
            tag=tag,
            labels=labels,
            network_mode="host",
            rm=True,
            pull=False,
            forcerm=True,  # a failed step's container too
        )
    except docker.errors.BuildError as exc:
        chunks = (chunk.get("stream", chunk.get("error", "")) for chunk in exc.build_log)
        output = "".join(map(str, chunks))
        tail = "\n".join(output.splitlines()[-20:])
        raise ClusterError(f"building {tag} failed: {exc.msg}\n{tail}") from exc


def debian_mirror() -> str:
    """``$KAFKA_REPLAY_DEBIAN_MIRROR``, else the Debian mirror this machine's apt uses."""
    if os.environ.get(MIRROR_ENV):
        return os.environ[MIRROR_ENV]
    for source in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")):
        try:
            text = source.read_text()
        except OSError:
            continue
        match = re.search(r"^URIs:\s*(\S+/debian)\s*$", text, re.M) or re.search(
            r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)\s+bookworm\s", text, re.M
        )
        if match:
            return match.group(1)
    return DEFAULT_MIRROR
