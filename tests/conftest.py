"""Fixtures the test suite shares beyond the harness's own pytest plugin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from harness.checker import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session per test process (``local[2]``, bound to 127.0.0.1)."""
    session = spark_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
