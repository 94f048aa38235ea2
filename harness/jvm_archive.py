"""Class-data-sharing archives for the JVMs the harness starts: Kafka brokers and Spark.

A JVM spends its first seconds loading and verifying thousands of classes; Java's AppCDS maps
them from an archive instead. An archive is made once per program version, Java runtime and
classpath: a training run records the classes the program loads (``-XX:DumpLoadedClassList``),
then ``java -Xshare:dump`` writes them with the options the program runs with. A JVM that
finds an archive that does not match its classpath or options runs without it, so a stale
archive slows a start but never breaks one; a training run that fails only costs the
speed-up, with a warning, and is not tried again until its directory is deleted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from kafka_replay.file_lock import file_lock

log = logging.getLogger(__name__)

CLASS_LIST = "classes.lst"
ARCHIVE = "classes.jsa"
FAILED = "failed.txt"
DUMP_TIMEOUT_S = 600

#: Runs the program once with the given extra JVM options (the class list's), then returns
#: the JVM options and classpath it ran with (``[..., "-cp", path]``), to dump with.
Training = Callable[[Sequence[str]], Sequence[str]]


def archive_dir(root: Path, name: str, java: str, identity: str) -> Path:
    """``root/<name>-<digest>``: one per Java runtime (path, size, time) and ``identity``."""
    real = Path(java).resolve()
    stat = real.stat()
    text = f"{real}:{stat.st_size}:{stat.st_mtime_ns}\n{identity}"
    return root / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def class_archive(directory: Path, what: str, java: str, train: Training) -> Path | None:
    """The archive in ``directory``, made on first use; ``None`` when it could not be made."""
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
            "%s: recording the classes it loads, so that later starts map them from an "
            "archive (once; cached in %s)",
            what,
            directory,
        )
        try:
            _make(directory, java, train)
        except Exception as exc:  # an optimisation: never fail a start for it
            reason = f"{type(exc).__name__}: {exc}"
            (directory / FAILED).write_text(reason + "\n")
            log.warning(
                "%s: no class-data archive (%s); it starts without one. Delete %s to try again.",
                what,
                reason,
                directory,
            )
            return None
    return archive


def class_list(archive: Path) -> Path:
    """The class list an archive was dumped from (an image build dumps its own from it)."""
    return archive.parent / CLASS_LIST


def _make(directory: Path, java: str, train: Training) -> None:
    recorded = directory / CLASS_LIST
    options = train([f"-XX:DumpLoadedClassList={recorded}"])
    if not recorded.is_file() or recorded.stat().st_size == 0:
        raise RuntimeError("the training run wrote no class list")
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".jsa", delete=False) as staging:
        partial = Path(staging.name)
    try:
        command = [
            java,
            "-Xshare:dump",
            f"-XX:SharedClassListFile={recorded}",
            f"-XX:SharedArchiveFile={partial}",
            *options,
        ]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, check=False
        )
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-10:])
            raise RuntimeError(f"java -Xshare:dump exited {result.returncode}: {tail}")
        os.replace(partial, directory / ARCHIVE)
    finally:
        partial.unlink(missing_ok=True)
