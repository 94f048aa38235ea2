"""Nothing outlives the harness: killed test runs, Ctrl-C and crashes leave no broker behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from kafka_replay.cluster import EmbeddedCluster, ExternalCluster
from kafka_replay.cluster.backends import backend_names
from kafka_replay.pytest_plugin import skip_unavailable
from kafka_replay.servers.docker import (
    LEASE_LABEL,
    DockerUnavailable,
    docker_client,
    reap_containers,
)
from kafka_replay.servers.paths import REGISTRY_ENV
from kafka_replay.servers.reaper import LEASE_ENV, reap_orphans
from kafka_replay.waiting import wait_for
from tests.kafka_helpers import consume_until, new_consumer, produce_acked

#: Every backend; Tansu's (built from source, minutes) in the matrix tier.
BACKENDS = [
    pytest.param(name, marks=pytest.mark.matrix) if name == "tansu" else name
    for name in backend_names()
]


def _wait_for_file(path: Path, process: subprocess.Popen[str], timeout: float = 180) -> dict:
    def appeared() -> bool:
        if path.exists():
            return True
        if process.poll() is not None:
            raise AssertionError(f"child exited with {process.returncode}: {process.stdout.read()}")
        return False

    wait_for(appeared, timeout, f"{path} did not appear within {timeout}s", error=AssertionError)
    return json.loads(path.read_text())


def _broker_alive(pid: int) -> bool:
    """True if ``pid`` is still a broker JVM of the killed run (pid reuse is ruled out)."""
    try:
        process = psutil.Process(pid)
        return (
            process.is_running()
            and process.status() != psutil.STATUS_ZOMBIE
            and LEASE_ENV in process.environ()
        )
    except psutil.NoSuchProcess:
        return False


def _wait_execed(pid: int, program: str, timeout: float = 30) -> None:
    """Wait until ``pid`` runs ``program``: ``setpriv`` sets the death signal before its exec,
    and an owner killed before then leaves the server to the reaper (seen once under load)."""
    wait_for(
        lambda: psutil.Process(pid).cmdline()[:1] == [program],
        timeout,
        f"{pid} never ran {program}",
        every_s=0.01,
        error=AssertionError,
    )


def _kill_and_collect(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)


def _pytest_run_holding_a_broker(
    tmp_path: Path, backend: str
) -> tuple[subprocess.Popen[str], dict]:
    """A real pytest run, stopped inside a test that holds a broker of ``backend``."""
    ready = tmp_path / "ready.json"
    test_file = tmp_path / "test_holds_broker.py"
    test_file.write_text(
        textwrap.dedent(
            f"""
            import json, os, threading

            def test_holds_a_broker(kafka_cluster):
                state = {{"token": kafka_cluster.lease.token,
                         "data_dir": str(kafka_cluster.data_dir)}}
                with open({str(ready)!r} + ".part", "w") as out:
                    json.dump(state, out)
                os.replace({str(ready)!r} + ".part", {str(ready)!r})  # never seen half written
                threading.Event().wait()  # until interrupted or killed
            """
        )
    )
    command = [sys.executable, "-m", "pytest", str(test_file), "-p", "no:cacheprovider", "-q",
               "--replay-kafka-backend", backend]  # fmt: skip
    child = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        return child, _wait_for_file(ready, child)
    except BaseException:
        _kill_and_collect(child)
        raise


def _leftovers(token: str) -> list[str]:
    """Processes and containers still tagged with a lease."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(LEASE_ENV) == token and process.status() != "zombie":
                found.append(f"process {process.pid}")
        except psutil.Error:
            continue
    try:
        client = docker_client()
    except DockerUnavailable:
        return found
    for container in client.containers.list(all=True, filters={"label": f"{LEASE_LABEL}={token}"}):
        found.append(f"container {container.name}")
    return found


@pytest.mark.parametrize("kafka_backend", BACKENDS)
def test_sigkilled_pytest_run_leaves_no_broker_once_the_next_run_starts(
    tmp_path: Path, kafka_backend: str, request: pytest.FixtureRequest
) -> None:
    skip_unavailable(request, kafka_backend, None)
    child, state = _pytest_run_holding_a_broker(tmp_path, kafka_backend)
    _kill_and_collect(child)

    # what the next run does first when it starts a cluster
    reap_orphans()
    if kafka_backend == "container":
        reap_containers()

    wait_for(
        lambda: not _leftovers(state["token"]),
        30,
        lambda: f"left behind: {_leftovers(state['token'])}",
        error=AssertionError,
    )
    assert not Path(state["data_dir"]).exists()


@pytest.mark.parametrize("kafka_backend", BACKENDS)
def test_a_finished_pytest_session_leaves_nothing(
    tmp_path: Path, kafka_backend: str, request: pytest.FixtureRequest
) -> None:
    skip_unavailable(request, kafka_backend, None)
    state_file = tmp_path / "state.json"
    (tmp_path / "test_uses_kafka.py").write_text(
        textwrap.dedent(
            f"""
            import json

            def test_uses_kafka(kafka_cluster, kafka_topic):
                kafka_topic("orders")
                state = {{"token": kafka_cluster.lease.token,
                         "data_dir": str(kafka_cluster.data_dir)}}
                json.dump(state, open({str(state_file)!r}, "w"))
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "-p", "no:cacheprovider", "-q",
         "--replay-kafka-backend", kafka_backend],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    state = json.loads(state_file.read_text())
    assert _leftovers(state["token"]) == []
    assert not Path(state["data_dir"]).exists()


@pytest.mark.parametrize("kafka_backend", BACKENDS)
def test_ctrl_c_in_a_pytest_run_tears_the_broker_down(
    tmp_path: Path, kafka_backend: str, request: pytest.FixtureRequest
) -> None:
    skip_unavailable(request, kafka_backend, None)
    child, state = _pytest_run_holding_a_broker(tmp_path, kafka_backend)
    child.send_signal(signal.SIGINT)
    try:
        output, _ = child.communicate(timeout=60)
    finally:
        _kill_and_collect(child)
    assert "KeyboardInterrupt" in output
    # no reaping here: the interrupted run's own teardown must have done it all
    assert _leftovers(state["token"]) == []
    assert not Path(state["data_dir"]).exists()


def test_reaper_kills_a_broker_whose_owner_was_killed(tmp_path: Path) -> None:
    """With the die-with-owner safety off, only the lease reaper can clean up: prove it does."""
    registry = tmp_path / "registry"  # private, so no other test's start reaps it first
    ready = tmp_path / "ready.json"
    script = textwrap.dedent(
        f"""
        import json, os, threading
        from kafka_replay.cluster import EmbeddedCluster
        cluster = EmbeddedCluster(die_with_owner=False).start()
        state = {{"pids": [n.process.pid for n in cluster.nodes],
                 "data_dir": str(cluster.data_dir)}}
        with open({str(ready)!r} + ".part", "w") as out:
            json.dump(state, out)
        os.replace({str(ready)!r} + ".part", {str(ready)!r})  # never seen half written
        threading.Event().wait()
        """
    )
    env = {**os.environ, REGISTRY_ENV: str(registry)}
    child = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        state = _wait_for_file(ready, child)
    finally:
        _kill_and_collect(child)
    try:
        assert all(_broker_alive(pid) for pid in state["pids"]), (
            "the broker should have survived its owner here; the reaper has nothing to prove"
        )
        os.environ[REGISTRY_ENV] = str(registry)
        killed = reap_orphans()
    finally:
        os.environ.pop(REGISTRY_ENV, None)
        for pid in state["pids"]:  # never leak, even if the assertions above fail
            if _broker_alive(pid):
                psutil.Process(pid).kill()
    assert sorted(killed) == sorted(state["pids"])
    assert not any(_broker_alive(pid) for pid in state["pids"])
    assert not Path(state["data_dir"]).exists()
    assert list(registry.glob("*.json")) == []


def test_a_started_server_dies_with_its_owner_and_no_fork_handler_runs(tmp_path: Path) -> None:
    """A server dies with the process that started it (no reaper needed), and starting it runs
    nothing a library registered for a fork: gRPC's, loaded with a Spark Connect client, once
    aborted an app between its fork and its exec (1 start in 200 with a pre-exec hook)."""
    registry = tmp_path / "registry"  # private, so no other test's start reaps it first
    script = textwrap.dedent(
        """
        import json, os, sys
        from kafka_replay.servers.process import spawn
        from kafka_replay.servers.reaper import Lease
        forks = []
        os.register_at_fork(before=lambda: forks.append(1))
        with open(os.devnull, "wb") as log:
            server = spawn(["sleep", "300"], log, Lease.take())
        print(json.dumps({"pid": server.pid, "forks": len(forks)}), flush=True)
        sys.stdin.read()
        """
    )
    env = {**os.environ, REGISTRY_ENV: str(registry)}
    owner = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert owner.stdout is not None
        started = json.loads(owner.stdout.readline())
        _wait_execed(started["pid"], "sleep")
    finally:
        _kill_and_collect(owner)
    assert started["forks"] == 0
    wait_for(
        lambda: not _broker_alive(started["pid"]),
        30,
        "the server outlived its owner",
        every_s=0.05,
        error=AssertionError,
    )
    os.environ[REGISTRY_ENV] = str(registry)
    try:
        assert reap_orphans() == []  # nothing was left for the reaper: only the lease file
    finally:
        os.environ.pop(REGISTRY_ENV, None)
    assert list(registry.glob("*.json")) == []


def test_reaper_leaves_live_owners_alone(tmp_path: Path) -> None:
    with EmbeddedCluster(work_dir=tmp_path) as cluster:
        pids = {node.process.pid for node in cluster.nodes}
        assert not pids & set(reap_orphans())
        assert all(node.alive() for node in cluster.nodes)
        assert cluster.data_dir is not None and cluster.data_dir.exists()


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_kafka_replay_up_serves_until_stopped(tmp_path: Path, stop_signal: int) -> None:
    up = subprocess.Popen(
        [sys.executable, "-m", "kafka_replay.cli", "up", "--log-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        bootstrap = up.stdout.readline().strip()  # the first stdout line is the address
        assert bootstrap.startswith("127.0.0.1:"), bootstrap or up.stderr.read()
        cluster = ExternalCluster(bootstrap)
        topic = cluster.create_topic("by-hand")
        produce_acked(cluster, topic, [("k", "hello")])
        consumer = new_consumer(cluster)
        consumer.subscribe([topic])
        try:
            got = consume_until(consumer, lambda seen: len(seen) == 1)
        finally:
            consumer.close()
        assert got[0].value() == b"hello"
        pids = [p.pid for p in psutil.Process(up.pid).children() if "kafka.Kafka" in p.cmdline()]
        assert pids, "no broker process under kafka-replay up"
        up.send_signal(stop_signal)
        assert up.wait(timeout=60) == 0
    finally:
        if up.poll() is None:
            up.kill()
    assert not any(_broker_alive(pid) for pid in pids)
    assert (tmp_path / "broker-1.log").exists()
