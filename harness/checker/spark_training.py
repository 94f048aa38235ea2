"""The training run of the Spark driver's class-data archive, a Python process of its own.

Run as ``python -m kafka_replay.checker.spark_training JVM_OPTION...`` by
:func:`kafka_replay.checker.driver_archive.spark_class_archive`: it starts a session with the
checker's settings, runs a query of the kinds the checker runs, and prints the JVM options and
classpath the archive is dumped with. Apart from :mod:`.driver_archive` because it needs the
checker's session, whose module imports the archive's.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kafka_replay.checker.driver_archive import TRAINING_ONLY
from kafka_replay.checker.spark import spark_session


def _training_run(options: Sequence[str]) -> None:
    """A session like the checker's through reads, joins and aggregations; print its JVM."""
    spark = spark_session(class_sharing=False, java_options=options)
    try:
        with tempfile.TemporaryDirectory(prefix="kafka-replay-spark-training-") as work:
            path = Path(work) / "events.jsonl"
            rows = (json.dumps({"event_id": f"e{i}", "key": f"k{i % 7}"}) for i in range(100))
            path.write_text("\n".join(rows) + "\n")
            events = spark.read.json(str(path))
            counts = events.groupBy("key").count()
            events.join(counts, "key").filter("count > 1").orderBy("event_id").collect()
        jvm = spark._jvm  # type: ignore[attr-defined]
        arguments = (
            jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
        )
        ran_with = {
            "options": [str(a) for a in arguments if not str(a).startswith(TRAINING_ONLY)],
            "classpath": str(jvm.System.getProperty("java.class.path")),
        }
    finally:
        spark.stop()
    print(json.dumps(ran_with))


if __name__ == "__main__":
    _training_run(sys.argv[1:])
