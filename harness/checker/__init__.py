"""The checker: a PySpark job that proves what happened to every record of a run.

It reads the run history's format (docs/history.md, through :mod:`kafka_replay.history`) and
Kafka, through Spark's own Kafka source; beyond those it stands on :mod:`kafka_replay.servers`
(Maven jars, JVMs, the Spark Connect server's process), :mod:`kafka_replay.jvm_archive` and
:mod:`kafka_replay.apps` (how an output record names its input: ``event_id``), never
on the engine.

Names are imported on first use, so the light part of this package (the constants a command
line needs: ``GUARANTEES``, ``OUTPUT_FORMATS``) never pays for the heavy ones (Spark).
"""

from __future__ import annotations

from kafka_replay.lazy import lazy_package

# Light, and named like their module: imported now, so the submodule cannot shadow them.
from .verdict import GUARANTEES as GUARANTEES
from .verdict import guarantee_result as guarantee_result
from .verdict import verdict as verdict

#: The file formats an app's output may be checked in (``FileOutput``).
OUTPUT_FORMATS = ("json", "parquet")

_lazy, __getattr__ = lazy_package(
    __name__,
    {
        ".analysis": "ANOMALIES analyse",
        ".anomaly_registry": "Finding",
        ".check": "CheckResult check_run",
        ".matching": "CheckInputs",
        ".outputs": "FileOutput JdbcOutput KafkaOutput",
        ".spark": "spark_session",
    },
)
__all__ = sorted([*_lazy, "GUARANTEES", "OUTPUT_FORMATS", "guarantee_result", "verdict"])
