"""``--scale N``: N times an incident's records, the same conditions (pure logic, no broker)."""

from __future__ import annotations

from pathlib import Path

from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.scale import scale_definition


def test_records_rates_and_waits_are_multiplied_faults_are_not() -> None:
    one = load_incident(Path("incidents/crash-restart-eos.toml"))
    ten = load_incident(Path("incidents/crash-restart-eos.toml"), scale=10)
    for profile in ("vulnerable", "remediated"):
        before = one.profiles[profile].workloads["stream"]
        after = ten.profiles[profile].workloads["stream"]
        assert after.parameters["count"] == 10 * before.parameters["count"] == 30000
        assert after.parameters["students"] == before.parameters["students"]
        assert after.rate == 10 * before.rate
        assert len(list(after.records())) == 30000
    steps = {step.do: dict(step.options) for step in ten.steps}
    assert steps["drain"]["budget_s"] == 600
    assert steps["kill_at_random"]["times"] == 6
    assert steps["kill_at_random"]["gap_s"] == [3.0, 5.0]


def test_a_profiles_own_workloads_are_scaled_too() -> None:
    data = {
        "workloads": {"a": {"generator": "quiet_events", "count": 20, "rate": 2.0}},
        "steps": [{"do": "wait_acks", "count": 20, "timeout_s": 30}, {"do": "idle", "seconds": 5}],
        "profiles": {"remediated": {"workloads": {"a": {"count": 40}}}, "vulnerable": {}},
    }
    scaled = scale_definition(data, 3)
    assert scaled["workloads"]["a"] == {"generator": "quiet_events", "count": 60, "rate": 6.0}
    assert scaled["steps"] == [
        {"do": "wait_acks", "count": 60, "timeout_s": 90},
        {"do": "idle", "seconds": 5},
    ]
    assert scaled["profiles"]["remediated"]["workloads"]["a"] == {"count": 120}
    assert scaled["profiles"]["vulnerable"] == {}
    assert data["workloads"]["a"]["count"] == 20  # the original is left alone
    assert scale_definition(data, 1) is data


def test_the_steps_a_teams_app_gets_are_scaled_like_the_others() -> None:
    one = load_incident(Path("incidents/leader-loss-acks-one.toml")).for_your_app()
    two = load_incident(Path("incidents/leader-loss-acks-one.toml"), scale=2).for_your_app()
    drains = [
        (a.options["budget_s"], b.options["budget_s"])
        for a, b in zip(one.steps, two.steps, strict=True)
        if a.do == "drain"
    ]
    assert drains and all(after == 2 * before for before, after in drains)
