"""Fixtures the test suite shares beyond the harness's own pytest plugin."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark(replay_spark: SparkSession) -> SparkSession:
    """The plugin's Spark session, shared with the incident items of the same process."""
    return replay_spark
