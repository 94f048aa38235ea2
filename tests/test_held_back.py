"""What held the app back, said beside inputs a run could not judge: worded from hand-made
histories (pure logic), and once from a real run whose killed member the coordinator waited
out to its session timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from kafka_replay.cluster import choose_version
from kafka_replay.cluster.backends import choose_backend
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import Condition
from kafka_replay.judging.held_back import held_back
from kafka_replay.judging.judge import judge
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.runner import run_incident
from tests.test_symptoms import evidence

T0 = 1_000_000.0  # when the run started: the message counts seconds from here
ADDING = "Adding new member rdkafka-1 with group instance id null; client reason: not provided"
REMOVED = {"kind": "removed", "member": "rdkafka-0", "reason": "session timeout"}


def at(seconds: float, **event: Any) -> dict[str, Any]:
    return {"ts": T0 + seconds, **event}


def steps(drain_from: float = 10.0, end: float = 57.0) -> list[dict[str, Any]]:
    return [
        at(1.0, kind="step", do="start_apps", started=T0 + 0.5, ended=T0 + 1.0),
        at(end, kind="step", do="drain", started=T0 + drain_from, ended=T0 + end),
    ]


def killed(
    seconds: float, instance: int = 0, restarted_after: float | None = 0.5
) -> list[dict[str, Any]]:
    """An instance SIGKILLed (it sends no LeaveGroup), and the supervisor's restart."""
    events = [
        at(seconds, kind="signal", instance=instance, signal="SIGKILL"),
        at(seconds, kind="exit", instance=instance, code=-9, signal="SIGKILL", expected=False),
    ]
    if restarted_after is not None:
        events.append(at(seconds + restarted_after, kind="start", instance=instance, restart=True))
    return events


def said(**streams: Any) -> list[str]:
    streams.setdefault("steps", steps())
    streams.setdefault("client_config", {"session.timeout.ms": 45000})
    return held_back(evidence(start=T0, **streams))


def test_a_killed_member_waited_out_to_its_session_timeout_is_named() -> None:
    """The measured case: killed once at its client's 45 s session timeout, the restarted
    instance's join began a rebalance that waited for the dead member to the end of the run."""
    group = [
        at(1.1, kind="rebalance", generation=0, reason=ADDING),
        at(1.2, kind="stabilized", generation=1, members=1),
        at(13.0, kind="rebalance", generation=1, reason=ADDING),
        at(57.3, **REMOVED),  # logged after the run ended, before the log was read
        at(57.4, kind="stabilized", generation=2, members=1),
    ]
    assert said(lifecycle=killed(12.3), group=group) == [
        "for the last 44 s the group was rebalancing (a member killed at 12.3 s was waited out "
        "to its session timeout)"
    ]
    not_yet = [e for e in group if e["ts"] < T0 + 57]  # its log read before the removal
    assert said(lifecycle=killed(12.3), group=not_yet) == [
        "for the last 44 s the group was rebalancing (a member killed at 12.3 s never left the "
        "group)"
    ]


def test_a_rebalance_over_before_the_end_is_timed_within_the_last_stretch() -> None:
    group = [
        at(30.0, kind="rebalance", generation=3, reason=ADDING),
        at(34.0, kind="stabilized", generation=4, members=2),
        at(40.0, kind="rebalance", generation=4, reason="explicit `LeaveGroup` request"),
        at(40.2, kind="empty", generation=5),  # the last member left: nobody rebalances
    ]
    assert said(group=group) == [
        "for 4 s of the last 47 s the group was rebalancing (1 member joining)"
    ]


def test_without_a_rebalance_a_dead_members_partitions_wait_out_its_session() -> None:
    """KIP-848's consumer protocol assigns at once: the dead member's partitions wait alone."""
    group = [
        at(31.0, kind="rebalance", generation=7, reason="new assignment"),
        at(75.0, kind="removed", member="m0", reason="its session expired"),
    ]
    assert said(lifecycle=killed(30.0), group=group) == [
        "for the last 27 s the partitions of a member killed at 30.0 s had no live owner in the "
        "group (it was waited out to its session timeout)"
    ]


def test_instances_down_and_crash_looping_are_named_with_how_long() -> None:
    lifecycle = killed(20.0, instance=0, restarted_after=3.0)
    for n, second in enumerate((37.0, 38.0, 40.0, 44.0, 52.0)):  # dying young, never back
        lifecycle.append(at(second, kind="exit", instance=1, code=1, signal=None, expected=False))
        if n < 4:
            lifecycle.append(at(second + 0.5, kind="start", instance=1, restart=True))
        if n >= 2:
            lifecycle.append(at(second, kind="crash_loop", instance=1, short_lives=n + 1))
    assert said(lifecycle=sorted(lifecycle, key=lambda e: e["ts"])) == [
        "the app was down: instance 0 for 3 s of the last 47 s, instance 1 for the last 5 s "
        "(crash-looping, 5 exits)"
    ]
    never_back = killed(45.0, instance=0, restarted_after=None)
    assert said(lifecycle=never_back) == ["the app was down: instance 0 for the last 12 s"]


def test_only_what_the_history_shows_is_named() -> None:
    """A kill restarted at once and a short rebalance hold nothing back; a member that left
    on its way out was waited for by nobody; no steps, no last stretch."""
    group = [
        at(20.1, kind="rebalance", generation=1, reason=ADDING),
        at(20.6, kind="stabilized", generation=2, members=1),
    ]
    assert said(lifecycle=killed(20.0, restarted_after=0.3), group=group) == []
    left = [
        at(30.0, kind="leave", member="rdkafka-0", reason="not provided"),
        at(30.0, kind="rebalance", generation=2, reason="explicit `LeaveGroup` request"),
        at(50.0, kind="removed", member="rdkafka-9", reason="session timeout"),
    ]
    exited = [at(30.2, kind="exit", instance=0, code=1, signal=None, expected=False),
              at(30.4, kind="start", instance=0, restart=True)]  # fmt: skip
    assert said(lifecycle=exited, group=left) == [
        "for the last 27 s the group was rebalancing (a member that stopped heartbeating was "
        "waited out to its session timeout)"
    ]
    assert said(lifecycle=killed(12.3), group=left, steps=[]) == []


def test_a_pipelines_groups_are_named() -> None:
    group = [
        at(13.0, kind="rebalance", generation=1, reason=ADDING, group="chain-billing"),
        at(14.0, kind="rebalance", generation=1, reason=ADDING, group="chain-onboarding"),
        at(14.2, kind="stabilized", generation=2, members=1, group="chain-onboarding"),
    ]
    lifecycle = [
        at(12.3, kind="exit", instance=0, app="billing", code=-9, signal="SIGKILL", expected=False),
        at(12.8, kind="start", instance=0, app="billing", restart=True),
    ]
    assert said(lifecycle=lifecycle, group=group) == [
        "for the last 44 s the group chain-billing was rebalancing (a member killed at 12.3 s "
        "never left the group)"
    ]


def test_the_reason_a_run_could_not_be_judged_says_what_held_the_app_back() -> None:
    held = ["for the last 44 s the group was rebalancing (a member killed at 12.3 s was waited "
            "out to its session timeout)"]  # fmt: skip
    judgement = judge(
        profile="remediated",
        users_app=True,
        signature=(Condition("rebalances", ">=", 1),),
        conditions=(),
        symptoms={"rebalances": 0},
        guarantee="at-least-once",
        check="unknown",
        verdict="unknown",
        counts={"unseen_at_deadline": 1155},
        held_back=held,
    )
    assert judgement.not_judged == (
        "the declared at-least-once guarantee could not be judged: 1155 acknowledged inputs "
        "were not in the output when the run ended and no commit had passed them (the app did "
        f"not get to them in time); {held[0]}"
    )


KILLED_IN_A_REBALANCE = """
name = "killed-in-a-rebalance"
title = "A consumer killed once, its session timeout longer than the drain"
post = "ours"
guarantee = "at-least-once"
time_scale = "a 10 s session timeout and a 5 s drain: the group still waits when the run ends"

[topics]
input = 2
output = 2

[client]
"session.timeout.ms" = 10000
"heartbeat.interval.ms" = 1000

[app]
command = "{python} -m kafka_replay_incidents.apps.batch_forwarder"

[workloads.stream]
generator = "student_onboarding"
count = 400
students = 40
rate = 50.0

[[steps]]
do = "start_apps"

[[steps]]
do = "produce"
workload = "stream"
background = true

[[steps]]
do = "wait_acks"
count = 100

[[steps]]
do = "kill_at_random"
times = 1
gap_s = [0.5, 0.5]
background = false

[[steps]]
do = "drain"
budget_s = 5

[signature]
backlog_drained = "== false"

[profiles.vulnerable]
description = "as above"

[profiles.remediated]
description = "as above"
"""


def test_a_real_run_names_the_member_the_group_waited_for(
    kafka_cluster_pool: ClusterPool, spark: SparkSession, tmp_path: Path
) -> None:
    """Real Kafka: the killed consumer never leaves; its restart joins and the coordinator
    holds the group in a rebalance until the dead member's 10 s session ends, past the drain."""
    path = tmp_path / "killed-in-a-rebalance.toml"
    path.write_text(KILLED_IN_A_REBALANCE)
    outcome = run_incident(
        load_incident(path),
        "remediated",
        cluster_for=kafka_cluster_pool.cluster_for(choose_version(None), choose_backend(None)),
        spark=lambda: spark,
        run_dir=tmp_path / "run",
        options=RunOptions(),
    )
    assert outcome.not_judged is not None, outcome.explain()
    assert "acknowledged inputs were not in the output when the run ended" in outcome.not_judged
    assert "s the group was rebalancing (a member killed at " in outcome.not_judged, (
        outcome.explain()
    )


def test_added_partitions_never_read_are_named_with_the_refresh_the_run_gave() -> None:
    """A client that refreshes its metadata every 5 minutes, not the incident's 20 s, never
    took up the partitions a step added: the unseen inputs are theirs."""
    added = at(
        8.0, kind="step", do="add_partitions", started=T0 + 7.9, ended=T0 + 8.1,
        topic="students", before=2, partitions=4,
    )  # fmt: skip
    produce = [
        {**at(9.0 + n, kind="ack", partition=n % 4, offset=n // 4), "topic": "students"}
        for n in range(8)
    ]
    deliveries = [  # only partitions 0 and 1 read
        {"event_id": f"e{n}", "in_partition": n % 2, "in_offset": n // 2, "out_partition": 0,
         "out_offset": n, "out_ts_ms": (T0 + 10 + n) * 1000}
        for n in range(4)
    ]  # fmt: skip
    found = said(
        steps=[*steps(), added], produce=produce, deliveries=deliveries, input_topic="students",
        client_config={"metadata.max.age.ms": 20000},
    )  # fmt: skip
    assert found == [
        "input partitions 2, 3, added at 8.1 s, held acknowledged inputs from 11.0 s and were "
        "never read (46 s to the end of the run): the group had not taken them up (a client "
        "learns of new partitions at its next metadata refresh: the run gave its app "
        "`metadata.max.age.ms` = 20000; a client that does not take it refreshes every 5 "
        "minutes by default)"
    ]
    assert said(steps=steps(), produce=produce, deliveries=deliveries, input_topic="students") == []
