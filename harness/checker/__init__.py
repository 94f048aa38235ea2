"""The checker: a PySpark job that proves what happened to every record of a run.

It depends only on the run history's format (docs/history.md) and on Kafka, read through
Spark's own Kafka source.

Names are imported on first use, so a light part of this package (its constants) never
pays for the heavy ones (Spark, testcontainers).
"""

from __future__ import annotations

from harness.lazy import lazy_exports

# Light, and named like their module: imported now, so the submodule cannot shadow them.
from .verdict import judge as judge
from .verdict import verdict as verdict

_EXPORTS = {
    "ANOMALIES": ".analysis",
    "CheckInputs": ".analysis",
    "CheckResult": ".check",
    "FileOutput": ".check",
    "Finding": ".analysis",
    "JdbcOutput": ".check",
    "KafkaOutput": ".check",
    "analyse": ".analysis",
    "check_run": ".check",
    "spark_session": ".spark",
}
__all__ = sorted([*_EXPORTS, "judge", "verdict"])

__getattr__ = lazy_exports(__name__, _EXPORTS)
