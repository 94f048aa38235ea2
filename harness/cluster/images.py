"""Kafka images for the container backend, including where no image registry can be reached.

Preference order: an image named by the user; this machine's ``kafka-replay/kafka:<version>``;
the official ``apache/kafka:<version>`` (local, else pulled); else a local image is built
``FROM`` the servers room's Java image (:mod:`kafka_replay.servers.docker`: a Debian root
filesystem made with debootstrap, a Java 17 runtime from apt) with the same Maven Central jars
the embedded backend runs. Building a tag that exists is a no-op.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from kafka_replay.servers.docker import (
    IMAGE_LABEL,
    JAVA_IMAGE,
    RECIPE_LABEL,
    Progress,
    build_lock,
    built_by,
    docker_build,
    docker_client,
    image_exists,
    java_base,
    pull_image,
)
from kafka_replay.servers.server_errors import ServerError

from .artifacts import kafka_classpath
from .embedded import JVM_OPTIONS, broker_class_list

log = logging.getLogger(__name__)

LOCAL_REPOSITORY = "kafka-replay/kafka"
OFFICIAL_REPOSITORY = "apache/kafka"

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


def local_image(version: str) -> str:
    return f"{LOCAL_REPOSITORY}:{version}"


def official_image(version: str) -> str:
    return f"{OFFICIAL_REPOSITORY}:{version}"


def resolve_image(version: str, image: str | None = None, progress: Progress = log.warning) -> str:
    """The image to run Kafka ``version`` from, pulling or building one if needed."""
    client = docker_client()
    if image:
        if not image_exists(client, image):
            pull_image(client, image)
        return image
    if image_current(client, local_image(version)):
        return local_image(version)
    if image_exists(client, official_image(version)):
        return official_image(version)
    try:
        pull_image(client, official_image(version))
        return official_image(version)
    except ServerError as exc:
        progress(f"{exc}; building {local_image(version)} locally instead")
    return build_kafka_image(version, progress)


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


def recipe() -> str:
    """What a local Kafka image is made of, as a short digest."""
    bundled = resources.files("kafka_replay.cluster") / "resources" / "entrypoint.sh"
    text = KAFKA_DOCKERFILE + bundled.read_text() + " ".join(JVM_OPTIONS)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def image_current(client: Any, tag: str) -> bool:
    """The local image exists and was built by this recipe."""
    return built_by(client, tag, recipe())


def _build_kafka_image(client: Any, version: str, tag: str, progress: Progress) -> None:
    java_base(client, progress)
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
