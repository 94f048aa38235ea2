"""Symptoms measured on hand-made run histories (pure logic; the real runs are the catalog's)."""

from __future__ import annotations

from typing import Any

from kafka_replay.checker import ANOMALIES, CheckResult, Finding
from kafka_replay.judging.evidence import Evidence
from kafka_replay.judging.symptoms import measure

TOPIC = "input"


def check(totals: dict[str, int] | None = None, **counts: int) -> CheckResult:
    findings = {name: Finding(counts.get(name, 0), []) for name in ANOMALIES}
    return CheckResult("at-least-once", "at-least-once", "pass", totals or {}, findings)


def evidence(**streams: Any) -> Evidence:
    fields: dict[str, Any] = {
        "produce": [], "lifecycle": [], "app": [], "offsets": [], "lag": [], "steps": [],
        "check": check(), "input_topic": TOPIC,
    }  # fmt: skip
    fields.update(streams)
    return Evidence(**fields)


def consumed(ts: float, partition: int, first: int, last: int) -> dict[str, Any]:
    span = {"topic": TOPIC, "partition": partition, "first": first, "last": last}
    return {"ts": ts, "kind": "consumed", "partitions": [{**span, "count": last - first + 1}]}


def ack(ts: float, partition: int, offset: int, key: str = "k", size: int = 100) -> dict[str, Any]:
    return {"ts": ts, "kind": "ack", "partition": partition, "offset": offset, "key": key,
            "size": size}  # fmt: skip


def test_consumption_that_starts_over_counts_as_a_jump_back() -> None:
    app = [consumed(1, 0, 0, 99), consumed(2, 1, 0, 49), consumed(3, 0, 100, 199)]
    app += [consumed(4, 0, 98, 150)]  # reread from 98 after reaching 200
    found = measure(evidence(app=app), ("consumed_offset_jumps_back", "largest_jump_back"))
    assert found == {"consumed_offset_jumps_back": 1, "largest_jump_back": 102}


def test_symptoms_an_uninstrumented_app_cannot_show_are_unmeasured() -> None:
    names = ("max_poll_exceeded", "rejected_commits", "consumed_offset_jumps_back")
    assert set(measure(evidence(), names).values()) == {None}


def test_rejected_commits_and_dropped_members_are_counted() -> None:
    app = [
        {"ts": 1, "kind": "client_error", "code": "_MAX_POLL_EXCEEDED"},
        {"ts": 2, "kind": "commit_result", "ok": False, "code": "UNKNOWN_MEMBER_ID"},
        {"ts": 3, "kind": "commit_result", "ok": True},
    ]
    found = measure(evidence(app=app), ("max_poll_exceeded", "rejected_commits"))
    assert found == {"max_poll_exceeded": 1, "rejected_commits": 1}


def test_a_stale_commit_in_the_quiet_period_shows_as_lag() -> None:
    acks = [ack(1, 0, offset) for offset in range(10)]
    steps = [{"do": "idle", "label": "quiet", "started": 100.0, "ended": 105.0}]

    def commit(ts: float, offset: int) -> dict[str, Any]:
        return {"kind": "commit", "topic": TOPIC, "partition": 0, "offset": offset,
                "commit_ts_ms": ts * 1000}  # fmt: skip

    before, stale, outside = commit(99, 10), commit(101, 4), commit(106, 2)
    run = evidence(produce=acks, steps=steps, offsets=[before, stale, outside])
    assert measure(run, ("lag_while_idle",)) == {"lag_while_idle": 6}


def test_the_redeploy_starting_from_the_log_start_is_recognised() -> None:
    acks = [ack(1, p, o) for p in (0, 1) for o in range(5)]
    steps = [{"do": "start_apps", "label": "redeploy", "started": 50.0, "ended": 51.0}]
    early = [consumed(10, 0, 0, 4), consumed(11, 1, 0, 4)]
    from_start = evidence(produce=acks, steps=steps, app=[*early, consumed(52, 0, 0, 4)])
    resumed = evidence(produce=acks, steps=steps, app=[*early, consumed(52, 0, 5, 6)])
    assert measure(from_start, ("restarted_from_log_start",)) == {"restarted_from_log_start": True}
    assert measure(resumed, ("restarted_from_log_start",)) == {"restarted_from_log_start": False}


def test_a_hot_partition_that_drains_one_record_per_fetch_wait() -> None:
    acks = [ack(0.0, 1, offset, key="deal-1", size=800_000) for offset in range(30)]
    acks += [ack(0.0, 0, 0, key="account-1"), ack(0.0, 2, 0, key="account-2")]
    acks.append(ack(5.0, 4, 0, key="deal-1", size=800_000))  # the key moved: 3 -> 6 partitions
    app = [consumed(1.0 + i, 1, i, i) for i in range(10)]
    lag = [{"ts": 12, "partition": 1, "lag": 20}, {"ts": 12, "partition": 0, "lag": 0}]
    lag.append({"ts": 12, "partition": 2, "lag": 0})
    run = evidence(produce=acks, app=app, lag=lag, client_config={"fetch.max.wait.ms": 1000})
    names = (
        "hot_partition", "lag_isolated_to_hot_partition", "hot_arrival_gap_s",
        "hot_records_per_arrival", "hot_arrivals_fetch_wait_apart", "hot_drain_rate",
        "keys_moved",
    )  # fmt: skip
    assert measure(run, names) == {
        "hot_partition": 1,
        "lag_isolated_to_hot_partition": True,
        "hot_arrival_gap_s": 1.0,
        "hot_records_per_arrival": 1,
        "hot_arrivals_fetch_wait_apart": True,
        "hot_drain_rate": 1.0,
        "keys_moved": 1,
    }
    fast = evidence(produce=acks, app=app, lag=lag, client_config={"fetch.max.wait.ms": 100})
    assert measure(fast, ("hot_arrivals_fetch_wait_apart",)) == {
        "hot_arrivals_fetch_wait_apart": False
    }
    in_bulk = evidence(produce=acks, app=[consumed(1.0, 1, 0, 29)], lag=lag)  # one delivery
    assert measure(in_bulk, ("hot_arrival_gap_s", "hot_arrivals_fetch_wait_apart")) == {
        "hot_arrival_gap_s": None,
        "hot_arrivals_fetch_wait_apart": False,
    }


def test_what_the_brokers_did_to_the_input_log_is_measured_only_when_it_was_read() -> None:
    names = ("lost_writes", "log_duplicates", "log_reordered")
    counts = {"lost_write": 3, "log_duplicate": 2, "log_reordered": 1}
    assert measure(evidence(check=check(**counts)), names) == dict.fromkeys(names)
    read = check({"log_records": 99}, **counts)
    assert read.source_read
    assert measure(evidence(check=read), names) == {
        "lost_writes": 3,
        "log_duplicates": 2,
        "log_reordered": 1,
    }
    clean = evidence(check=check({"log_records": 99}))
    assert measure(clean, names) == dict.fromkeys(names, 0)


def test_broker_and_network_faults_are_counted_from_the_steps() -> None:
    def step(do: str, kind: str = "step", **found: Any) -> dict[str, Any]:
        return {"kind": kind, "do": do, "started": 1.0, "ended": 2.0, **found}

    occurrences = [{"nodes": [1], "started": 1.0, "ended": 1.3}] * 3
    steps = [
        step("kill_broker", node=1),
        step("restart_broker", node=1),
        step("pause_broker", node=2, background=True),
        step("pause_broker", "resumed", node=2),  # the resume of the same pause
        step("network_fault", occurrences=occurrences),
        step("network_fault", fault="reset", background=True),  # its times come when it ends
        step("network_fault", "ended", occurrences=occurrences[:2]),
    ]
    found = measure(evidence(steps=steps), ("brokers_killed", "brokers_paused", "network_faults"))
    assert found == {"brokers_killed": 1, "brokers_paused": 1, "network_faults": 5}


def test_a_partition_left_unread_is_timed_from_its_first_waiting_record() -> None:
    produce = [ack(1, 0, 0), ack(1, 1, 0), ack(2, 1, 1), ack(9, 1, 2)]
    app = [consumed(1.5, 0, 0, 0), consumed(1.2, 1, 0, 0), consumed(8, 1, 1, 1)]
    app += [consumed(9.5, 1, 2, 2)]  # partition 1 waited from 2 to 8 with record 1 unread
    assert measure(evidence(produce=produce, app=app), ("partition_unread_s",)) == {
        "partition_unread_s": 6.0
    }
    still_waiting = [*produce, ack(10, 0, 1)]  # partition 0's last record is never consumed
    found = measure(evidence(produce=still_waiting, app=app), ("partition_unread_s",))
    assert found == {"partition_unread_s": 6.0}  # measured up to the last thing seen (10 s)


def test_a_static_member_fenced_at_each_request_counts_once() -> None:
    group = [
        {"ts": 1, "kind": "static_fenced", "member": "orders-a", "instance_id": "orders"},
        {"ts": 2, "kind": "static_fenced", "member": "orders-a", "instance_id": "orders"},
        {"ts": 3, "kind": "static_fenced", "member": "orders-b", "instance_id": "orders"},
        {"ts": 4, "kind": "static_refused", "member": "m1", "instance_id": "orders-0"},
    ]
    names = ("static_members_fenced", "static_joins_refused")
    assert measure(evidence(group=group), names) == {
        "static_members_fenced": 2,
        "static_joins_refused": 1,
    }
    assert set(measure(evidence(), names).values()) == {None}  # no broker logs: unmeasured


def test_a_new_partition_begun_at_its_end_is_told_from_one_read_whole() -> None:
    """Input 2 -> 4 partitions: the group's first commit on a new partition above inputs of it
    that never reached the output (a latest consumer) counts; one read from 0 does not."""
    steps = [{"kind": "step", "do": "add_partitions", "topic": TOPIC, "before": 2,
              "partitions": 4, "started": 5.0, "ended": 5.5}]  # fmt: skip
    acks = [{**ack(1, 0, o), "event_id": f"p0-{o}"} for o in range(5)]
    acks += [{**ack(6 + o, p, o), "event_id": f"p{p}-{o}"} for p in (2, 3) for o in range(10)]

    def commit(partition: int, offset: int) -> dict[str, Any]:
        return {"kind": "commit", "topic": TOPIC, "partition": partition, "offset": offset}

    def run(offsets: list[dict[str, Any]], ids: list[str]) -> Evidence:
        deliveries = [{"event_id": i} for i in ids]
        return evidence(produce=acks, steps=steps, offsets=offsets, deliveries=deliveries)

    name = ("new_partitions_started_past_zero",)
    old = [f"p0-{o}" for o in range(5)]
    # latest: partition 2 begun at 6 (0-5 skipped), partition 3 at 8; later commits do not matter
    read = old + [f"p2-{o}" for o in range(6, 10)] + [f"p3-{o}" for o in range(8, 10)]
    skipped = run([commit(0, 5), commit(2, 7), commit(3, 9), commit(2, 10), commit(3, 10)], read)
    assert measure(skipped, name) == {name[0]: 2}
    # earliest: the first commit is above records too, but every one of them was delivered
    every = [f"p{p}-{o}" for p in (2, 3) for o in range(10)]
    whole = run([commit(0, 5), commit(2, 4), commit(3, 10), commit(2, 10)], old + every)
    assert measure(whole, name) == {name[0]: 0}
    # an original partition's loss is not a new partition's start
    lost_old = run([commit(0, 5), commit(2, 10), commit(3, 10)], every)
    assert measure(lost_old, name) == {name[0]: 0}
    # no partitions added, or added to another topic (or an older history without "before")
    assert measure(evidence(produce=acks), name) == {name[0]: None}
    other = [{**steps[0], "topic": "output"}]
    assert measure(evidence(produce=acks, steps=other), name) == {name[0]: None}


def test_the_smallest_lost_input_is_measured_from_the_acks() -> None:
    acks = [ack(1, 0, o, size=300) for o in range(4)] + [ack(1, 0, 4, size=900_000)]
    acks += [ack(1, 0, 5, size=950_000), ack(1, 0, 6, size=200)]  # 6: past the commit, unseen
    for a in acks:
        a["topic"] = TOPIC
    delivered = [{"in_partition": 0, "in_offset": o} for o in (0, 1, 2, 3)]
    lag = [{"ts": 2, "topic": TOPIC, "partition": 0, "committed": 6, "lag": 1}]
    run = evidence(produce=acks, lag=lag, deliveries=delivered, check=check(lost=2))
    assert measure(run, ("smallest_lost_input_bytes",)) == {"smallest_lost_input_bytes": 900_000}
    nothing_lost = evidence(produce=acks, lag=lag, deliveries=delivered)
    assert measure(nothing_lost, ("smallest_lost_input_bytes",)) == {
        "smallest_lost_input_bytes": None
    }


def test_isr_shrinks_and_min_isr_refusals_come_from_the_replica_events() -> None:
    replicas = [
        {"ts": 1, "kind": "isr_shrink", "topic": "out", "partition": 2, "broker": 1,
         "isr_from": [1, 2, 3], "isr_to": [1, 2]},
        {"ts": 2, "kind": "isr_shrink", "topic": "out", "partition": 2, "broker": 1,
         "isr_from": [1, 2], "isr_to": [1]},
        {"ts": 3, "kind": "not_enough_replicas", "topic": "out", "partition": 2, "min_isr": 2},
    ]  # fmt: skip
    names = ("isr_shrinks", "min_isr_refusals")
    assert measure(evidence(replicas=replicas), names) == {"isr_shrinks": 2, "min_isr_refusals": 1}
    assert measure(evidence(replicas=[]), names) == {"isr_shrinks": 0, "min_isr_refusals": 0}
    assert set(measure(evidence(), names).values()) == {None}  # no broker logs
