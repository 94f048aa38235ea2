"""The app under test runs as real processes, receives the contract, and is supervised."""

from __future__ import annotations

import json
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_replay.apps import (
    AppContext,
    AppSpec,
    AppStartError,
    OutputRecord,
    RestartPolicy,
    Supervisor,
    default_event_id,
)
from kafka_replay.cluster import Cluster
from kafka_replay.history import RunHistory
from kafka_replay.history.group import group_members
from kafka_replay.workload import WorkloadProducer, student_onboarding
from tests.kafka_helpers import consume_until, eventually, new_consumer

PY = shlex.quote(sys.executable)
ECHO_COMMAND = (
    f"{PY} -m tests.apps.echo --bootstrap {{bootstrap}} --input {{input_topic}} "
    "--output {output_topic} --group {group_id} --instance {instance}"
)
CLIENT_CONFIG = {"session.timeout.ms": 12000}


@pytest.fixture
def history(tmp_path: Path) -> Iterator[RunHistory]:
    run = RunHistory(tmp_path / "run")
    yield run
    run.close()


def ids(messages: list) -> set[str | None]:
    return {default_event_id(OutputRecord.from_message(m)) for m in messages}


def supervise(
    spec: str,
    cluster: Cluster,
    history: RunHistory,
    topics: tuple[str, str] = ("in", "out"),
    policy: RestartPolicy | None = None,
) -> Supervisor:
    group = cluster.unique_name("app")
    return Supervisor(
        AppSpec.parse(spec),
        lambda i: AppContext(cluster.bootstrap_servers, *topics, group, CLIENT_CONFIG, i),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
        policy=policy,
        report_dir=history.root / "events",
    )


@pytest.mark.parametrize("spec", ["tests.apps.echo:run", ECHO_COMMAND], ids=["callable", "command"])
def test_app_receives_the_contract_and_its_output_correlates(
    spec: str, kafka_cluster: Cluster, kafka_topic, history: RunHistory
) -> None:
    source, sink = kafka_topic("input", partitions=3), kafka_topic("output")
    producer = WorkloadProducer(kafka_cluster.bootstrap_servers, source, history.stream("produce"))
    stats = producer.run(student_onboarding(count=60, students=10, seed=7))
    acked = {e["event_id"] for e in history.read("produce") if e["kind"] == "ack"}
    assert stats.acked == len(acked) == 60

    supervisor = supervise(spec, kafka_cluster, history, (source, sink)).start(1)
    try:
        reader = new_consumer(kafka_cluster)
        reader.subscribe([sink])
        try:
            outputs = consume_until(reader, lambda seen: ids(seen) >= acked, timeout=60)
        finally:
            reader.close()
    finally:
        supervisor.stop()

    assert ids(outputs) == acked
    seen = json.loads(outputs[0].value())["seen"]
    env = seen["env"]
    group = env["REPLAY_GROUP_ID"]
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == kafka_cluster.bootstrap_servers
    assert (env["REPLAY_INPUT_TOPIC"], env["REPLAY_OUTPUT_TOPIC"]) == (source, sink)
    assert json.loads(env["REPLAY_CLIENT_CONFIG"]) == CLIENT_CONFIG
    assert env["REPLAY_TRANSACTIONAL_ID"] == f"{group}-tx-0"
    assert env["REPLAY_INSTANCE"] == "0"
    if seen["argv"] is not None:  # the command got its placeholders filled in
        expected_argv = {"bootstrap": kafka_cluster.bootstrap_servers, "input": source,
                         "output": sink, "group": group, "instance": "0"}  # fmt: skip
        assert seen["argv"] == expected_argv

    reports = history.read("app-0")
    assert any(r["kind"] == "assigned" and len(r["partitions"]) == 3 for r in reports)
    assert any(r["kind"] == "commit_result" and r["ok"] for r in reports)
    lifecycle = history.read("lifecycle")
    assert [e["kind"] for e in lifecycle] == ["start", "stop", "exit"]
    assert lifecycle[-1]["expected"] is True


def test_sigkilled_instance_is_restarted_and_both_are_recorded(
    kafka_cluster: Cluster, kafka_topic, history: RunHistory
) -> None:
    source, sink = kafka_topic("input"), kafka_topic("output")
    policy = RestartPolicy(delay_s=0.5)
    with supervise("tests.apps.echo:run", kafka_cluster, history, (source, sink), policy) as apps:
        apps.start(1)
        apps.signal(0, signal.SIGKILL)
        eventually(
            lambda: any(e["kind"] == "start" and e["restart"] for e in history.read("lifecycle")),
            timeout=30,
            what="a restart after SIGKILL",
        )
        assert apps.running() == [0]
    events = history.read("lifecycle")
    kinds = [e["kind"] for e in events]
    assert kinds[:4] == ["start", "signal", "exit", "start"]
    first, fault, death, restart = events[:4]
    assert fault["signal"] == "SIGKILL" and fault["pid"] == first["pid"]
    assert death["signal"] == "SIGKILL" and death["expected"] is False
    assert restart["restart"] is True and restart["pid"] != first["pid"]
    assert restart["attempt"] == 2


def test_app_that_exits_at_once_fails_with_its_output(
    kafka_cluster: Cluster, history: RunHistory
) -> None:
    crashing = f"{PY} -c \"import sys; print('boom: no PAYMENTS_URL set'); sys.exit(3)\""
    with pytest.raises(AppStartError) as failure:
        supervise(crashing, kafka_cluster, history).start(1)
    message = str(failure.value)
    assert "exited with code 3" in message
    assert "boom: no PAYMENTS_URL set" in message
    assert [e["kind"] for e in history.read("lifecycle")] == ["start", "exit"]


def test_app_that_cannot_be_started_says_why(kafka_cluster: Cluster, history: RunHistory) -> None:
    with pytest.raises(AppStartError, match=r"could not start app instance 0 .*no-such-app"):
        supervise("no-such-app --flag", kafka_cluster, history).start(1)


def test_app_that_hangs_at_shutdown_is_killed_after_the_grace_period(
    kafka_cluster: Cluster, history: RunHistory
) -> None:
    stubborn = (
        f'{PY} -c "import signal, threading; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
        'threading.Event().wait()"'
    )
    apps = supervise(stubborn, kafka_cluster, history).start(1)
    apps.stop(grace=0.5)
    kinds = [e["kind"] for e in history.read("lifecycle")]
    assert kinds == ["start", "stop", "killed_after_grace", "exit"]
    assert history.read("lifecycle")[-1]["signal"] == "SIGKILL"


def test_a_crash_loop_is_recorded_and_restarted_with_back_off(
    kafka_cluster: Cluster, history: RunHistory, tmp_path
) -> None:
    marker = tmp_path / "started-once"
    # survives its first start-up window, then dies at once after every restart
    flaky = (
        f'{PY} -c "import os, sys, time; first = not os.path.exists({str(marker)!r}); '
        f"open({str(marker)!r}, 'a').close(); time.sleep(4 if first else 0); "
        "print('cannot reach the payments service'); sys.exit(1)\""
    )
    policy = RestartPolicy(delay_s=0.2, max_delay_s=1.6, startup_s=3.0, crash_loop=3)
    with supervise(flaky, kafka_cluster, history, policy=policy) as apps:
        apps.start(1)
        eventually(
            lambda: sum(e["kind"] == "start" for e in history.read("lifecycle")) >= 6,
            timeout=60,
            what="restarts through the crash loop",
        )
        apps.check()  # a crash loop is what incidents are made of: never a failure
    events = history.read("lifecycle")
    assert any(e["kind"] == "crash_loop" and e["short_lives"] == 3 for e in events)
    exits = [e["ts"] for e in events if e["kind"] == "exit" and not e["expected"]]
    starts = [e["ts"] for e in events if e["kind"] == "start"][1:]
    gaps = [start - exit for exit, start in zip(exits, starts, strict=False)]
    assert gaps[3] > 2 * gaps[1]  # the back-off doubles while it keeps dying young


def test_an_app_that_finishes_is_completed_and_its_policy_decides(
    kafka_cluster: Cluster, history: RunHistory
) -> None:
    batch = f"{PY} -c \"print('copied 0 records')\""
    with supervise(batch, kafka_cluster, history, policy=RestartPolicy(restart="on-failure")) as a:
        a.start(1)  # exit 0 at once is a finished run, not a failed start
        a.check()
    kinds = [e["kind"] for e in history.read("lifecycle")]
    assert kinds == ["start", "exit"] and history.read("lifecycle")[1]["completed"] is True

    scheduled = RestartPolicy(restart="every:0.5")
    with supervise(batch, kafka_cluster, history, policy=scheduled) as apps:
        apps.start(1)
        eventually(
            lambda: sum(e["kind"] == "start" for e in history.read("lifecycle")) >= 4,
            timeout=30,
            what="the scheduled job to run again",
        )


def test_an_app_that_never_joins_its_group_is_an_error(
    kafka_cluster: Cluster, history: RunHistory
) -> None:
    idle = f"{PY} -c \"import time; print('waiting for a config file'); time.sleep(60)\""
    group = kafka_cluster.unique_name("app")
    admin = kafka_cluster.admin()
    apps = Supervisor(
        AppSpec.parse(idle),
        lambda i: AppContext(kafka_cluster.bootstrap_servers, "in", "out", group, {}, i),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
        policy=RestartPolicy(ready_timeout_s=3.0),
        ready=lambda members: group_members(admin, group) >= members,
    )
    with pytest.raises(AppStartError, match=r"(?s)did not join its consumer group.*waiting for a"):
        apps.start(1)
    assert apps.running() == []


def test_readiness_ends_the_start_as_soon_as_the_group_has_the_member(
    kafka_cluster: Cluster, kafka_topic, history: RunHistory
) -> None:
    source, sink = kafka_topic("input"), kafka_topic("output")
    group = kafka_cluster.unique_name("app")
    admin = kafka_cluster.admin()
    apps = Supervisor(
        AppSpec.parse("tests.apps.echo:run"),
        lambda i: AppContext(kafka_cluster.bootstrap_servers, source, sink, group, {}, i),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
        ready=lambda members: group_members(admin, group) >= members,
    )
    with apps:
        apps.start(1)
        assert group_members(admin, group) == 1


def test_two_instances_share_the_partitions_and_a_scale_down_rebalances(
    kafka_cluster: Cluster, kafka_topic, history: RunHistory
) -> None:
    source, sink = kafka_topic("input", partitions=4), kafka_topic("output")

    def owned(instance: int) -> set[int]:
        """The partitions an instance holds, from its own assigned/revoked reports."""
        held: set[int] = set()
        for report in history.read(f"app-{instance}"):
            partitions = {p["partition"] for p in report.get("partitions", [])}
            if report["kind"] == "assigned":
                held = partitions
            elif report["kind"] in ("revoked", "lost"):
                held -= partitions
        return held

    with supervise("tests.apps.echo:run", kafka_cluster, history, (source, sink)) as apps:
        apps.start(2)
        eventually(
            lambda: bool(owned(0) and owned(1)) and owned(0) | owned(1) == {0, 1, 2, 3},
            timeout=60,
            what="both instances holding partitions",
        )
        assert not owned(0) & owned(1)
        apps.stop_instance(1)
        eventually(lambda: owned(0) == {0, 1, 2, 3}, timeout=60, what="a rebalance to instance 0")
        assert apps.running() == [0]


def test_an_instance_can_be_frozen_and_thawed(kafka_cluster: Cluster, history: RunHistory) -> None:
    import psutil

    idle = f'{PY} -c "import threading; threading.Event().wait()"'
    with supervise(idle, kafka_cluster, history) as apps:
        apps.start(1)
        (pid,) = [e["pid"] for e in history.read("lifecycle") if e["kind"] == "start"]
        apps.signal(0, signal.SIGSTOP)
        eventually(lambda: psutil.Process(pid).status() == psutil.STATUS_STOPPED, 10, "a freeze")
        apps.signal(0, signal.SIGCONT)
        eventually(lambda: psutil.Process(pid).status() != psutil.STATUS_STOPPED, 10, "a thaw")
    signals = [e["signal"] for e in history.read("lifecycle") if e["kind"] == "signal"]
    assert signals == ["SIGSTOP", "SIGCONT"]


def test_a_user_function_correlates_transformed_output(tmp_path, monkeypatch) -> None:
    from kafka_replay.apps import load_extractor

    (tmp_path / "my_ids.py").write_text(
        "def event_id(record):\n    return record.value.decode().split('|')[0]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    extract = load_extractor("my_ids:event_id")
    record = OutputRecord("out", 0, 5, b"k", b"e-42|billed", {})
    assert extract(record) == "e-42"
    assert load_extractor(None)(OutputRecord("out", 0, 6, None, b'{"event_id": "e-7"}')) == "e-7"
    with pytest.raises(ValueError, match="cannot import 'nowhere'"):
        load_extractor("nowhere:event_id")


class _DyingApp:
    """Stands in for a supervisor whose one instance always exits just before it is signalled."""

    def running(self) -> list[int]:
        return [0]

    def check(self) -> None:
        pass

    def signal(self, index: int, sig: signal.Signals) -> None:
        raise RuntimeError(f"instance {index} is not running")


def test_kills_at_random_end_when_the_app_keeps_dying_on_its_own() -> None:
    """Every kill misses (the app died on its own during the gap): the series ends anyway,
    with none sent, once its gaps and restarts have had their time."""
    import random
    import threading

    from kafka_replay.faults.actions import kill_at_random

    sent = kill_at_random(
        _DyingApp(),  # type: ignore[arg-type]
        random.Random(1),
        3,
        (0.05, 0.05),
        threading.Event(),
        slack_s=0.1,
    )
    assert sent == 0


class _FreezableApp:
    """Stands in for a supervisor whose one instance runs through every signal sent to it."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.asked_after_signal = 0

    def running(self) -> list[int]:
        self.asked_after_signal += bool(self.sent)
        return [0]

    def check(self) -> None:
        pass

    def signal(self, index: int, sig: signal.Signals) -> None:
        self.sent.append(sig.name)


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGCONT], ids=["SIGSTOP", "SIGCONT"])
def test_a_freeze_or_a_thaw_is_not_waited_out_as_an_exit(sig: signal.Signals) -> None:
    """SIGSTOP and SIGCONT end nothing: the step does not wait for the instance to exit, so the
    step after a freeze begins as soon as it is sent."""
    import random
    import threading

    from kafka_replay.faults.actions import kill_at_random

    app = _FreezableApp()
    assert kill_at_random(app, random.Random(1), 1, (0.0, 0.0), threading.Event(), sig=sig) == 1  # type: ignore[arg-type]
    assert app.sent == [sig.name] and app.asked_after_signal == 0


def test_a_reference_apps_result_carries_the_identity_the_harness_stamped() -> None:
    """The catalog's apps read a record's identity from its ``event_id`` header: a team's own
    messages (``--payload``) have no such field, and the result of one named ``None`` or a
    crash would leave every input unaccounted for (a stand-in record: this is the app's own
    logic, its runs on Kafka are the catalog's)."""
    from types import SimpleNamespace

    from kafka_replay_incidents.apps.common import result_of

    def record(value: dict[str, object], headers: list[tuple[str, bytes]]) -> SimpleNamespace:
        return SimpleNamespace(value=lambda: json.dumps(value).encode(), headers=lambda: headers,
                               partition=lambda: 2, offset=lambda: 7)  # fmt: skip

    order = record({"order_id": "o-1", "customer": "c-9"}, [("event_id", b"e-1")])
    value, headers = result_of(order)  # type: ignore[arg-type]
    assert json.loads(value)["event_id"] == "e-1" and headers == [("event_id", b"e-1")]
    unstamped = record({"event_id": "e-2", "key": "k"}, [])
    assert json.loads(result_of(unstamped)[0])["event_id"] == "e-2"  # type: ignore[arg-type]
