"""A class-data-sharing archive of the broker's classes, made once per Kafka version and Java.

A broker JVM spends most of its first seconds loading and verifying some 7,000 classes. Java's
AppCDS maps them from an archive instead. The harness records which classes a broker loads
while it starts and serves a produce, a consumer group's commit and a transaction (a training
run), then has the JVM dump them (``-Xshare:dump``). A JVM that finds the archive does not
match its classpath or flags runs without it, so a stale archive slows a start but never
breaks one; a training run that fails only costs the speed-up, with a warning.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .artifacts import file_lock
from .base import Cluster
from .paths import cache_root

log = logging.getLogger(__name__)

CLASS_LIST = "classes.lst"
ARCHIVE = "kafka.jsa"
FAILED = "failed.txt"
DUMP_TIMEOUT_S = 300
TRAINING_TIMEOUT_S = 30
#: The training clients' retries while the new broker loads its coordinators are expected.
QUIET = {"log_level": 0}

#: Runs a broker with the given extra JVM options through a produce, a commit and a
#: transaction, then stops it (the JVM writes its class list as it loads classes).
TrainingRun = Callable[[Sequence[str]], None]


def archive_dir(version: str, java: str, classpath: Sequence[Path]) -> Path:
    """One directory per Kafka version, Java runtime and classpath: an archive fits only those."""
    real = Path(java).resolve()
    stat = real.stat()
    identity = f"{real}:{stat.st_size}:{stat.st_mtime_ns}\n" + "\n".join(map(str, classpath))
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return cache_root() / "class-data" / f"kafka-{version}-{digest}"


def class_archive(
    version: str, jvm: Sequence[str], classpath: Sequence[Path], train: TrainingRun
) -> Path | None:
    """The archive for ``jvm`` (a java command up to, not including, the main class).

    Made on first use (about 20 seconds, once); ``None`` when it could not be made.
    """
    directory = archive_dir(version, jvm[0], classpath)
    archive = directory / ARCHIVE
    if archive.is_file():
        return archive
    if (directory / FAILED).is_file():
        return None
    directory.mkdir(parents=True, exist_ok=True)
    with file_lock(directory / ".lock"):
        if archive.is_file():
            return archive
        if (directory / FAILED).is_file():
            return None
        log.warning(
            "Kafka %s: recording the classes a broker loads, so that later starts map them "
            "from an archive (once per version, about 20 s; cached in %s)",
            version,
            directory,
        )
        try:
            _make(directory, jvm, train)
        except Exception as exc:  # an optimisation: never fail a start for it
            reason = f"{type(exc).__name__}: {exc}"
            (directory / FAILED).write_text(reason + "\n")
            log.warning(
                "Kafka %s: no class-data archive (%s); brokers start without one. Delete %s to "
                "try again.",
                version,
                reason,
                directory,
            )
            return None
    return archive


def class_list(archive: Path) -> Path:
    """The class list an archive was dumped from (an image build dumps its own from it)."""
    return archive.parent / CLASS_LIST


def _make(directory: Path, jvm: Sequence[str], train: TrainingRun) -> None:
    class_list = directory / CLASS_LIST
    train([f"-XX:DumpLoadedClassList={class_list}"])
    if not class_list.is_file() or class_list.stat().st_size == 0:
        raise RuntimeError("the training broker wrote no class list")
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".jsa", delete=False) as staging:
        partial = Path(staging.name)
    try:
        command = [jvm[0], "-Xshare:dump", f"-XX:SharedClassListFile={class_list}",
                   f"-XX:SharedArchiveFile={partial}", *jvm[1:]]  # fmt: skip
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, check=False
        )
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-10:])
            raise RuntimeError(f"java -Xshare:dump exited {result.returncode}: {tail}")
        os.replace(partial, directory / ARCHIVE)
    finally:
        partial.unlink(missing_ok=True)


def exercise(cluster: Cluster) -> None:
    """What a replay does first: a topic, acknowledged produces, a group's commit, a transaction."""
    from confluent_kafka import Consumer, Producer

    topic = cluster.create_topic("class-training")
    producer = Producer(cluster.client_config(**{"enable.idempotence": True, **QUIET}))
    producer.produce(topic, b"training")
    if producer.flush(TRAINING_TIMEOUT_S) != 0:
        raise RuntimeError("the training broker acknowledged no produce")
    group = cluster.unique_name("class-training")
    consumer = Consumer(cluster.client_config(**{
        "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False, **QUIET,
    }))  # fmt: skip
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TRAINING_TIMEOUT_S
        while (message := consumer.poll(0.2)) is None or message.error():
            if time.monotonic() > deadline:
                raise RuntimeError("the training consumer received nothing")
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()
    transactional = Producer(cluster.client_config(**{"transactional.id": group, **QUIET}))
    transactional.init_transactions(TRAINING_TIMEOUT_S)
    transactional.begin_transaction()
    transactional.produce(topic, b"training")
    transactional.commit_transaction(TRAINING_TIMEOUT_S)
