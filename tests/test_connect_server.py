"""The Spark Connect server the lanes of ``--jobs`` share: a check on it finds what a driver of
its own finds, it stops with nothing left, and one that cannot start says why.

The client runs in a process of its own: PySpark switches a whole process to Spark Connect
once it holds a remote session, and this test process keeps its own driver for the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from pyspark.sql import SparkSession

from kafka_replay.checker.check import check_run
from kafka_replay.checker.connect_server import SparkConnectServer
from kafka_replay.checker.spark import REMOTE_ENV
from kafka_replay.checker.warm_up import made_up_run
from kafka_replay.servers.errors import ServerError
from kafka_replay.servers.ports import accepts_connections
from kafka_replay.servers.reaper import Lease

CLIENT = """
import json, os, sys
from pathlib import Path
from kafka_replay.checker.check import check_run
from kafka_replay.checker.spark import is_remote, spark_session
from kafka_replay.checker.warm_up import made_up_run

spark = spark_session()  # no master given: the server the environment names
assert is_remote(spark), type(spark)
root = Path(sys.argv[1])
print(json.dumps(check_run(spark, root, made_up_run(root), "exactly-once").to_json(), default=str))
"""


@pytest.fixture
def lease() -> Iterator[Lease]:
    taken = Lease.take()
    yield taken
    taken.release()


def test_a_check_on_the_shared_server_finds_what_a_driver_of_its_own_finds(
    spark: SparkSession, lease: Lease, tmp_path: Path
) -> None:
    own = check_run(spark, tmp_path / "own", made_up_run(tmp_path / "own"), "exactly-once")
    with SparkConnectServer(tmp_path / "connect.log", lease) as server:
        pid = server.pid
        answered = subprocess.run(
            [sys.executable, "-c", CLIENT, str(tmp_path / "remote")],
            env={**_environment(), REMOTE_ENV: server.url},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert answered.returncode == 0, answered.stderr[-3000:]
    remote = json.loads(answered.stdout.strip().splitlines()[-1])
    assert remote == json.loads(json.dumps(own.to_json(), default=str))
    assert own.counts["duplicate"] == 1 and own.counts["unexpected"] == 1  # the run's own
    assert server.port is not None and not accepts_connections(server.port)
    assert pid is not None and not psutil.pid_exists(pid)


def test_a_server_that_cannot_start_says_why_with_its_log(lease: Lease, tmp_path: Path) -> None:
    server = SparkConnectServer(tmp_path / "connect.log", lease, master="nowhere://at-all")
    with pytest.raises(ServerError, match=r"exited with \d+ before it answered.*connect\.log"):
        server.start()
    assert server.pid is None  # stopped


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != REMOTE_ENV}
