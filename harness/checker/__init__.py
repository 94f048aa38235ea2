"""The checker: a PySpark job that proves what happened to every record of a run.

It depends only on the run history's format (docs/history.md) and on Kafka, read through
Spark's own Kafka source.
"""

from .analysis import ANOMALIES, CheckInputs, Finding, analyse
from .check import CheckResult, FileOutput, JdbcOutput, KafkaOutput, check_run
from .spark import spark_session
from .verdict import judge, verdict

__all__ = [
    "ANOMALIES",
    "CheckInputs",
    "CheckResult",
    "FileOutput",
    "Finding",
    "JdbcOutput",
    "KafkaOutput",
    "analyse",
    "check_run",
    "judge",
    "spark_session",
    "verdict",
]
