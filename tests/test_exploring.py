"""The exploration's pure parts: drawing (the same seed, the same schedules; every drawn
schedule a valid definition), shrinking on made-up failures, and what counts as broken."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kafka_replay.cli_explore import parse_budget
from kafka_replay.definitions.definition import load_incident
from kafka_replay.exploring.explorer import KINDS, kinds_of
from kafka_replay.exploring.families import FAMILIES, choose_families
from kafka_replay.exploring.schedule import Fault, definition_text, draw, simpler_faults
from kafka_replay.exploring.shrinking import shrink
from kafka_replay.report.outcome import Outcome

APP = "{python} -m tests.apps.commit_first"


def test_the_same_seed_draws_the_same_schedules() -> None:
    families = choose_families(None)
    first = [draw(11, i, families) for i in range(20)]
    assert first == [draw(11, i, families) for i in range(20)]
    assert first != [draw(12, i, families) for i in range(20)]
    assert {f.family for s in first for f in s.faults} == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_drawn_schedule_is_a_definition_the_engine_reads(family: str, tmp_path: Path) -> None:
    for index in range(15):
        schedule = draw(3, index, choose_families(family))
        path = tmp_path / f"{schedule.name}.toml"
        for guarantee in ("at-least-once", "exactly-once"):
            path.write_text(definition_text(schedule, APP, guarantee, dict([KINDS["lost"]])))
            incident = load_incident(path)
            assert incident.name == schedule.name
            fault_steps = [s for f in schedule.faults for s in f.steps]
            assert len(incident.steps) == 5 + len(schedule.faults) + len(fault_steps)


def test_unknown_families_are_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown family retention.*allowed: app, groups"):
        choose_families("app,retention")
    assert [f.name for f in choose_families("brokers, app,brokers")] == ["brokers", "app"]


def test_budgets_read_as_seconds() -> None:
    assert [parse_budget(t) for t in ("90", "90s", "15m", "1.5h")] == [90, 90, 900, 5400]
    with pytest.raises(argparse.ArgumentTypeError, match="like 15m"):
        parse_budget("soon")


def _fault(family: str, after: int, **step: object) -> Fault:
    return Fault(family, after, ({"do": family, **step},))


def test_shrinking_keeps_only_the_fault_that_breaks_and_makes_it_simpler() -> None:
    faults = (
        _fault("pause", 100, seconds=6.0),
        _fault("kill", 300, times=3, gap_s=[1.0, 2.5]),
        _fault("restart", 500),
    )

    def still_fails(candidate: tuple[Fault, ...]) -> bool:
        return any(f.family == "kill" for f in candidate)

    shrunk = shrink(faults, still_fails, simpler_faults)
    assert len(shrunk) == 1
    (kill,) = shrunk
    assert kill.steps[0]["times"] == 1 and kill.steps[0]["gap_s"] == [1.0, 1.0]
    assert kill.after_acks > 300  # a later start broke it as well


def test_shrinking_keeps_faults_that_only_break_together() -> None:
    faults = (_fault("a", 100), _fault("b", 200), _fault("c", 300))

    def still_fails(candidate: tuple[Fault, ...]) -> bool:
        families = {f.family for f in candidate}
        return {"a", "c"} <= families

    assert [f.family for f in shrink(faults, still_fails, lambda f: iter(()))] == ["a", "c"]


def test_shrinking_stops_when_the_time_is_up() -> None:
    faults = (_fault("a", 100), _fault("b", 200))
    assert shrink(faults, lambda c: True, simpler_faults, out_of_time=lambda: True) == faults


def _outcome(anomalies: dict[str, int], **symptoms: object) -> Outcome:
    return Outcome("x", "vulnerable", "app", "at-least-once", "", False, None, anomalies,
                   dict(symptoms), 1.0, "")  # fmt: skip


def test_what_breaks_a_guarantee() -> None:
    assert kinds_of(_outcome({"lost": 2}), "at-least-once", False) == {"lost"}
    assert kinds_of(_outcome({"duplicate": 3}), "at-least-once", False) == set()
    assert kinds_of(_outcome({"duplicate": 3}), "exactly-once", False) == {"duplicated"}
    assert kinds_of(_outcome({"reordered": 1}), "exactly-once", False) == set()
    assert kinds_of(_outcome({"reordered": 1}), "exactly-once", True) == {"reordered"}
    assert kinds_of(_outcome({}, backlog_drained=False), "at-least-once", False) == {"not drained"}
    assert (
        kinds_of(_outcome({}, backlog_drained=True, crash_loops=0), "exactly-once", True) == set()
    )
