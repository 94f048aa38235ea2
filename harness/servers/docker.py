"""Docker for local servers: a daemon that answers, images built where no registry can be
reached, and containers leased like processes.

Every local image starts from :data:`DEBIAN_IMAGE`, a Debian root filesystem made with
debootstrap from this machine's apt mirror and never pulled; :data:`JAVA_IMAGE` adds a Java 17
runtime from Debian's packages. Builds use the host's network and local images only, under
one file lock (:func:`build_lock`), and carry a recipe label (:func:`built_by`) so that an
image made by an older recipe is rebuilt rather than reused.

Containers run through testcontainers, whose reaper container cannot be pulled everywhere,
so it is switched off: every container carries its lease's label (:data:`LEASE_LABEL`),
its owner removes it, and :func:`reap_containers` removes any whose owner died.
"""

from __future__ import annotations

import contextlib
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.file_lock import file_lock

from .paths import cache_root
from .reaper import lease_is_live
from .server_errors import DockerUnavailable, ServerError

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

log = logging.getLogger(__name__)

DEBIAN_IMAGE = "kafka-replay/debian:bookworm"
JAVA_IMAGE = "kafka-replay/jre17:bookworm"
#: Which label says what a local image holds (``kafka``, ``java``, ``postgres``).
IMAGE_LABEL = "kafka-replay.image"
#: Bumped by what the image holds: an older local image is rebuilt rather than reused.
RECIPE_LABEL = "kafka-replay.recipe"
#: Which label names the lease a container belongs to.
LEASE_LABEL = "kafka-replay.lease"
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


def image_exists(client: Any, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def pull_image(client: Any, tag: str) -> None:
    """``docker pull`` of ``tag``; a :class:`ServerError` saying why it could not."""
    import docker

    repository, _, version = tag.partition(":")
    try:
        client.images.pull(repository, tag=version or "latest")
    except docker.errors.DockerException as exc:
        reason = str(exc).split("\n")[0]
        raise ServerError(f"cannot pull {tag}: {reason}") from exc


@contextmanager
def build_lock() -> Iterator[None]:
    """Held while a local image is built: parallel test workers and runs must not build the
    same image twice, nor make the Debian root filesystem that every local image starts from."""
    lock = cache_root() / "artifacts" / "image-build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(lock):
        yield


def built_by(client: Any, tag: str, digest: str) -> bool:
    """The image ``tag`` exists and its recipe label is ``digest``."""
    import docker

    try:
        labels = client.images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        return False
    return labels.get(RECIPE_LABEL) == digest


def java_base(client: Any, progress: Progress) -> str:
    """:data:`JAVA_IMAGE`: :func:`debian_base` with Java 17 from Debian's packages, built when
    missing; call it under :func:`build_lock`."""
    if image_exists(client, JAVA_IMAGE):
        return JAVA_IMAGE
    debian_base(client, progress)
    with tempfile.TemporaryDirectory(prefix="kafka-replay-image-") as context:
        (Path(context) / "Dockerfile").write_text(JAVA_DOCKERFILE)
        progress(f"Building {JAVA_IMAGE}: Java 17 from Debian's packages")
        docker_build(client, Path(context), JAVA_IMAGE, {IMAGE_LABEL: "java"})
    return JAVA_IMAGE


def debian_base(client: Any, progress: Progress) -> str:
    """:data:`DEBIAN_IMAGE`, the base of every local image, made from a debootstrap root
    filesystem when missing (never pulled); call it under :func:`build_lock`."""
    if not image_exists(client, DEBIAN_IMAGE):
        _import_debian_rootfs(client, progress)
    return DEBIAN_IMAGE


def _import_debian_rootfs(client: Any, progress: Progress) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        raise ServerError(
            f"building a local image without a registry starts from {DEBIAN_IMAGE}, which "
            "needs debootstrap, run as root (Debian: apt-get install debootstrap); where a "
            "registry is reachable, a pulled image needs none of this"
        )
    mirror = debian_mirror()
    with tempfile.TemporaryDirectory(prefix="kafka-replay-rootfs-") as work:
        rootfs = Path(work) / "rootfs"
        progress(f"Making a Debian bookworm root filesystem with debootstrap from {mirror}")
        started = time.monotonic()
        result = subprocess.run(
            [debootstrap, "--variant=minbase", "bookworm", str(rootfs), mirror],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
            raise ServerError(f"debootstrap failed (exit {result.returncode}):\n{tail}")
        archive = Path(work) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(rootfs, arcname=".")
        repository, _, tag = DEBIAN_IMAGE.partition(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=tag)
        progress(f"Imported {DEBIAN_IMAGE} in {time.monotonic() - started:.0f}s")


def docker_build(client: Any, context: Path, tag: str, labels: dict[str, str]) -> None:
    """``docker build`` of ``context`` on the host's network (no bridge), from local images
    only: a failure is a :class:`ServerError` ending with the build's last lines."""
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
        raise ServerError(f"building {tag} failed: {exc.msg}\n{tail}") from exc


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


def docker_container(image: str) -> DockerContainer:
    """A testcontainers container of ``image``: imported here, so listing backends stays light."""
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer

    testcontainers_config.ryuk_disabled = True
    return DockerContainer(image)


def reap_containers() -> list[str]:
    """Remove containers whose lease is gone or whose owner died; return their names."""
    removed = []
    for container in docker_client().containers.list(all=True, filters={"label": LEASE_LABEL}):
        if not lease_is_live(container.labels.get(LEASE_LABEL, "")):
            with contextlib.suppress(Exception):
                container.remove(force=True)
                removed.append(container.name)
    if removed:
        log.warning("Removed containers a crashed run left: %s", ", ".join(removed))
    return removed
