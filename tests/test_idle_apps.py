"""Which app instances hold no partition, read from synthetic histories (pure logic)."""

from __future__ import annotations

from pathlib import Path

from kafka_replay.history.store import RunHistory
from kafka_replay.playing.idle_apps import idle_apps, idle_since

P0 = [{"topic": "in", "partition": 0}]
P1 = [{"topic": "in", "partition": 1}]


def test_an_instance_holding_a_partition_is_not_idle() -> None:
    events = [
        {"ts": 1.0, "kind": "start", "pid": 7},
        {"ts": 2.0, "kind": "assigned", "pid": 7, "partitions": P0 + P1},
        {"ts": 3.0, "kind": "revoked", "pid": 7, "partitions": P1},  # cooperative: one taken
    ]
    assert idle_since(events) is None


def test_an_instance_is_idle_from_the_revocation_that_emptied_it() -> None:
    events = [
        {"ts": 1.0, "kind": "assigned", "pid": 7, "partitions": P0},
        {"ts": 4.0, "kind": "revoked", "pid": 7, "partitions": P0},
    ]
    assert idle_since(events) == 4.0


def test_a_restarted_process_holds_nothing_until_it_is_assigned() -> None:
    events = [
        {"ts": 1.0, "kind": "assigned", "pid": 7, "partitions": P0},
        {"ts": 5.0, "kind": "start", "pid": 8},  # the first died without a word
    ]
    assert idle_since(events) == 5.0
    assert (
        idle_since([*events, {"ts": 6.0, "kind": "assigned", "pid": 8, "partitions": P0}]) is None
    )


def test_idle_apps_names_each_long_idle_instance_of_each_service(tmp_path: Path) -> None:
    history = RunHistory.new_run(tmp_path / "run")
    for start in (
        {"ts": 100.0, "kind": "start", "instance": 0, "pid": 1},
        {"ts": 100.0, "kind": "start", "instance": 1, "pid": 2},
        {"ts": 100.0, "kind": "start", "app": "enricher", "instance": 0, "pid": 3},
    ):
        history.stream("lifecycle").append(start)
    history.stream("app-0").append({"ts": 101.0, "kind": "assigned", "pid": 1, "partitions": P0})
    history.stream("app-1").append({"ts": 101.0, "kind": "consumed", "pid": 2})
    history.stream("app-enricher-0").append(
        {"ts": 150.0, "kind": "revoked", "pid": 3, "partitions": P0}
    )
    said = idle_apps(history, now=200.0)
    assert (
        said
        == "app-1 has held no partition for 100 s; app-enricher-0 has held no partition for 50 s"
    )
    assert idle_apps(history, now=105.0) is None  # a rebalance's ordinary pause
