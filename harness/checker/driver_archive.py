"""The Spark driver's class-data archive: made once per PySpark version and Java.

The checker's Spark session loads some 14,000 classes into the driver JVM before its first
query; mapped from an archive (see :mod:`kafka_replay.jvm_archive`), the session starts and runs
its first query in about half the time. The training run is a Python process of its own (the
driver's JVM is its process's py4j gateway and cannot be started again with other options):
it starts a session with the checker's settings, runs a query of the kinds the checker runs,
and prints the JVM options and classpath the archive is dumped with: that is
:mod:`kafka_replay.checker.spark_training`, which needs the checker's session (this module does
not import :mod:`kafka_replay.checker.spark`, which imports it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pyspark

from kafka_replay import jvm_archive
from kafka_replay.servers.paths import cache_root

TRAINING_TIMEOUT_S = 600
#: Options of the training JVM that are not the program's own.
TRAINING_ONLY = "-XX:DumpLoadedClassList="


def java() -> str | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java")


def spark_class_archive() -> Path | None:
    """The driver's archive for this PySpark and Java, made on first use (about a minute)."""
    runtime = java()
    if runtime is None:
        return None
    version = pyspark.__version__
    directory = jvm_archive.archive_dir(
        cache_root() / "class-data", f"spark-{version}", runtime, str(Path(pyspark.__file__))
    )
    return jvm_archive.class_archive(directory, f"Spark {version}", runtime, _train)


def _train(options: Sequence[str]) -> Sequence[str]:
    command = [sys.executable, "-m", "kafka_replay.checker.spark_training", *options]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=TRAINING_TIMEOUT_S, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-10:])
        raise RuntimeError(f"the training Spark session exited {result.returncode}: {tail}")
    ran_with = json.loads(lines[-1])
    return [*ran_with["options"], "-cp", ran_with["classpath"]]
