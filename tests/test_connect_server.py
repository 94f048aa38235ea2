"""The Spark Connect server that ``compare``'s sides (and ``--replay-shared-spark``) share: a
check on it finds what a driver of its own finds, it stops with nothing left, one that cannot
start says why, and pytest's workers check on the one the session started.

Each Spark client runs in a process of its own: PySpark switches a whole process to Spark
Connect once it holds a remote session, and the test process may be on either.
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

from kafka_replay.checker.connect_server import SparkConnectServer
from kafka_replay.checker.spark import REMOTE_ENV
from kafka_replay.servers.ports import accepts_connections
from kafka_replay.servers.reaper import Lease
from kafka_replay.servers.server_errors import ServerError

CHECK = """
import json, sys
from pathlib import Path
from kafka_replay.checker.check import check_run
from kafka_replay.checker.spark import is_remote, spark_session
from kafka_replay.checker.warm_up import made_up_run

root, master = Path(sys.argv[1]), sys.argv[2] or None
spark = spark_session(master)  # no master: the server the environment names
assert is_remote(spark) == (master is None), type(spark)
print(json.dumps(check_run(spark, root, made_up_run(root), "exactly-once").to_json(), default=str))
"""

#: A user's output-id function, in a module only the client's directory holds.
IDS = """
import json

def event_id(record):
    return "id-" + json.loads(record.value)["order"]
"""
USER_FUNCTION = """
import datetime
import ids  # from this directory, as a team's module is
from kafka_replay.checker.sources import user_event_id
from kafka_replay.checker.spark import spark_session

spark = spark_session()
schema = (
    "topic string, partition int, offset long, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>, timestamp timestamp"
)
when = datetime.datetime(2026, 1, 1)
rows = spark.createDataFrame([("out", 0, 7, None, b'{"order":"o-1"}', [], when)], schema)
print(rows.select(user_event_id(ids.event_id).alias("id")).first()["id"])
"""

WORKERS_TEST = """
import os
from pathlib import Path
from kafka_replay.checker.spark import REMOTE_ENV, is_remote

def _said():  # each worker says which server it checked on
    Path(__file__).with_name(f"server-{os.getpid()}").write_text(os.environ[REMOTE_ENV])

def test_one(replay_spark):
    assert is_remote(replay_spark) and replay_spark.range(5).count() == 5
    _said()

def test_two(replay_spark):
    assert is_remote(replay_spark) and replay_spark.range(7).count() == 7
    _said()
"""


@pytest.fixture
def lease() -> Iterator[Lease]:
    taken = Lease.take()
    yield taken
    taken.release()


def _environment(**extra: str) -> dict[str, str]:
    """This process's environment without a Spark Connect server, plus ``extra``."""
    kept = {
        k: v for k, v in os.environ.items() if k not in (REMOTE_ENV, "SPARK_CONNECT_MODE_ENABLED")
    }
    return {**kept, **extra}


def _check(root: Path, master: str, env: dict[str, str]) -> dict[str, object]:
    answered = subprocess.run(
        [sys.executable, "-c", CHECK, str(root), master],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert answered.returncode == 0, answered.stderr[-3000:]
    return json.loads(answered.stdout.strip().splitlines()[-1])


def test_a_check_on_the_shared_server_finds_what_a_driver_of_its_own_finds(
    lease: Lease, tmp_path: Path
) -> None:
    own = _check(tmp_path / "own", "local[2]", _environment())
    with SparkConnectServer(tmp_path / "connect.log", lease) as server:
        pid = server.pid
        remote = _check(tmp_path / "remote", "", _environment(**{REMOTE_ENV: server.url}))
    assert remote == own
    anomalies = own["anomalies"]
    assert isinstance(anomalies, dict)
    assert anomalies["duplicate"]["count"] == 1 and anomalies["unexpected"]["count"] == 1
    assert server.port is not None and not accepts_connections(server.port)
    assert pid is not None and not psutil.pid_exists(pid)


def test_a_users_function_from_the_directory_it_was_started_in_runs_on_the_server(
    lease: Lease, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ids.py").write_text(IDS)
    monkeypatch.chdir(tmp_path)  # where kafka-replay runs, the team's modules beside it
    with SparkConnectServer(tmp_path / "connect.log", lease) as server:
        ran = subprocess.run(
            [sys.executable, "-c", USER_FUNCTION],
            env=_environment(**{REMOTE_ENV: server.url}), cwd=tmp_path,
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == "id-o-1"


def test_a_server_that_cannot_start_says_why_with_its_log(lease: Lease, tmp_path: Path) -> None:
    server = SparkConnectServer(tmp_path / "connect.log", lease, master="nowhere://at-all")
    with pytest.raises(ServerError, match=r"exited with \d+ before it answered.*connect\.log"):
        server.start()
    assert server.pid is None  # stopped


@pytest.mark.matrix  # CI: a check on the server finds what a driver finds; compare's sides
def test_pytest_workers_check_on_the_one_server_the_session_started(tmp_path: Path) -> None:
    (tmp_path / "test_on_shared_spark.py").write_text(WORKERS_TEST)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q",
         "--replay-shared-spark", "test_on_shared_spark.py"],
        cwd=tmp_path, env=_environment(), capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    servers = {said.read_text() for said in tmp_path.glob("server-*")}
    assert len(servers) == 1, servers  # every worker, one server
    port = int(next(iter(servers)).rsplit(":", 1)[1])
    assert not accepts_connections(port)  # stopped with the session
