"""Nothing outlives the harness: killed test runs, Ctrl-C and crashes leave no broker behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from harness.cluster import EmbeddedCluster, ExternalCluster, reap_orphans
from harness.cluster.paths import REGISTRY_ENV
from harness.cluster.reaper import LEASE_ENV
from tests.kafka_helpers import consume_until, new_consumer, produce_acked

REPO = Path(__file__).resolve().parent.parent


def _wait_for_file(path: Path, process: subprocess.Popen[str], timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"child exited with {process.returncode}: {process.stdout.read()}")
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout}s"
        time.sleep(0.1)
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


def _kill_and_collect(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)


def _pytest_run_holding_a_broker(tmp_path: Path) -> tuple[subprocess.Popen[str], dict]:
    """A real pytest run, stopped inside a test that holds an embedded broker."""
    ready = tmp_path / "ready.json"
    test_file = tmp_path / "test_holds_broker.py"
    test_file.write_text(
        textwrap.dedent(
            f"""
            import json, threading

            def test_holds_a_broker(kafka_cluster):
                nodes = kafka_cluster.nodes
                json.dump({{"pids": [n.process.pid for n in nodes],
                           "data_dir": str(kafka_cluster.data_dir)}}, open({str(ready)!r}, "w"))
                threading.Event().wait()  # until interrupted or killed
            """
        )
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", str(test_file), "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        return child, _wait_for_file(ready, child)
    except BaseException:
        _kill_and_collect(child)
        raise


def _wait_until_gone(pids: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while any(_broker_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"broker still running after {timeout}s"
        time.sleep(0.1)


def test_sigkilled_pytest_run_leaves_no_broker_once_the_next_run_starts(tmp_path: Path) -> None:
    child, state = _pytest_run_holding_a_broker(tmp_path)
    _kill_and_collect(child)

    reap_orphans()  # what the next run does first when it starts a cluster

    _wait_until_gone(state["pids"])
    assert not Path(state["data_dir"]).exists()


def test_ctrl_c_in_a_pytest_run_tears_the_broker_down(tmp_path: Path) -> None:
    child, state = _pytest_run_holding_a_broker(tmp_path)
    child.send_signal(signal.SIGINT)
    try:
        output, _ = child.communicate(timeout=60)
    finally:
        _kill_and_collect(child)
    assert "KeyboardInterrupt" in output
    # no reaping here: the interrupted run's own teardown must have done it all
    assert not any(_broker_alive(pid) for pid in state["pids"])
    assert not Path(state["data_dir"]).exists()


def test_reaper_kills_a_broker_whose_owner_was_killed(tmp_path: Path) -> None:
    """With the die-with-owner safety off, only the lease reaper can clean up: prove it does."""
    registry = tmp_path / "registry"  # private, so no other test's start reaps it first
    ready = tmp_path / "ready.json"
    script = textwrap.dedent(
        f"""
        import json, threading
        from harness.cluster import EmbeddedCluster
        cluster = EmbeddedCluster(die_with_owner=False).start()
        json.dump({{"pids": [n.process.pid for n in cluster.nodes],
                   "data_dir": str(cluster.data_dir)}}, open({str(ready)!r}, "w"))
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


def test_reaper_leaves_live_owners_alone(tmp_path: Path) -> None:
    with EmbeddedCluster(work_dir=tmp_path) as cluster:
        pids = {node.process.pid for node in cluster.nodes}
        assert not pids & set(reap_orphans())
        assert all(node.alive() for node in cluster.nodes)
        assert cluster.data_dir is not None and cluster.data_dir.exists()


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_kafka_replay_up_serves_until_stopped(tmp_path: Path, stop_signal: int) -> None:
    up = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "up", "--log-dir", str(tmp_path)],
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
