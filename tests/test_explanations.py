"""The window a play's break came from, read from made-up histories (pure), and a schedule
drawn at random that breaks a service now and then replaced, on scripted plays, by the fault
aimed at that window, which breaks it every time."""

from __future__ import annotations

from pathlib import Path

from kafka_replay.definitions.definition import load_incident
from kafka_replay.exploring.explanations import LOST_BY, lost_at, repeated_at
from kafka_replay.exploring.findings import write_report
from kafka_replay.exploring.schedule import RECORDS, latest_ack
from kafka_replay.exploring.windows import COMMIT_AHEAD, LEAD_S, WRITES_AHEAD, Lineage
from tests.test_exploring import ScriptedPlayer, _explorer
from tests.test_windows import (
    QUARTER,
    RATE,
    START,
    TracedPlayer,
    _acks,
    _commit,
    _run_dir,
    _written,
)

#: The explorations below: a commit at a quarter of the records passes half of each
#: partition's offsets there, of which the last few never got a result.
HALF = QUARTER // 2
LOST_FROM = HALF - 12


def test_lost_inputs_point_at_the_commit_that_passed_them() -> None:
    acks = _acks(400)  # offsets 0..199 on each partition, from 100 s to 105 s
    # two commits: the first passes what was written; the second passes 0..149, of which
    # 100..149 never got a result
    commits = _commit(102.0, {0: 80, 1: 80}) + _commit(103.0, {0: 150, 1: 150})
    written = [w for w in _written(acks, 0.1) if w["in_offset"] < 100]
    found = lost_at(Lineage(acks, commits, written))
    assert [w.kind for w in found] == list(LOST_BY)
    assert {(w.at, w.inputs) for w in found} == {(103.0, 100)}
    # placed half a second of acks before the commit
    assert {w.acks for w in found} == {int((103.0 - LEAD_S - START) * RATE) + 1}
    # nothing lost, or lost but never committed past: no window explains it
    assert lost_at(Lineage(acks, commits, _written(acks, 0.1))) == []
    assert lost_at(Lineage(acks, _commit(102.0, {0: 80, 1: 80}), written)) == []


def test_repeated_inputs_point_at_their_first_write() -> None:
    acks = _acks(100)
    written = _written(acks, 0.1)
    again = [{**w, "out_ts_ms": w["out_ts_ms"] + 2000} for w in written[40:60]]
    (window,) = repeated_at(Lineage(acks, [], written + again))
    assert window.kind == WRITES_AHEAD and window.inputs == 20
    assert window.at == written[40]["out_ts_ms"] / 1000
    assert repeated_at(Lineage(acks, [], written)) == []


def test_a_drawn_schedule_that_breaks_now_and_then_is_written_as_the_fault_that_explains_it(
    tmp_path: Path,
) -> None:
    """Drawn at random, the schedule lost inputs in 2 of 5 plays; the play that broke it shows
    the commit that passed them, and the offset commit killed there breaks it in 5 of 5: that
    is written, and the drawn schedule is reported as intermittent, explained."""
    acks = _acks(RECORDS)
    commit_at = START + QUARTER / RATE
    written = [w for w in _written(acks, 0.1) if not LOST_FROM <= w["in_offset"] < HALF]
    run = _run_dir(tmp_path / "broke", acks, _commit(commit_at, {0: HALF, 1: HALF}), written)

    lost = {"lost": 24}
    # the drawn schedule: 2 of 5; its explanation: 2 candidate plays, 3 more, all lost; the
    # reference holds twice; shrinking's only candidate (no fault at all) holds
    player = TracedPlayer([run], [lost, {}, {}, lost, {}] + [lost] * 5, reference={})
    explorer = _explorer(player, tmp_path)
    result = explorer.explore()
    (finding,) = result.findings
    assert finding.drawn_broke == 2 and finding.drawn != finding.shrunk
    (fault,) = finding.shrunk.faults
    assert fault.aim is not None and fault.aim.kind == COMMIT_AHEAD
    step = dict(fault.steps[0])
    assert (step["api"], step["action"]) == ("OffsetCommit", "kill_sender")
    assert fault.after_acks == int((commit_at - LEAD_S - START) * RATE) + 1
    (intermittent,) = result.intermittent
    assert intermittent.broke == 2 and intermittent.explained == finding.shrunk.timeline()
    written_steps = load_incident(finding.path).steps
    assert any(s.options.get("api") == "OffsetCommit" for s in written_steps)
    report = write_report(result, 600, tmp_path / "out").read_text()
    assert "lost in 2 of 5 plays" in report and "written as that" in report


def test_a_schedule_whose_break_no_aimed_fault_explains_stays_intermittent(
    tmp_path: Path,
) -> None:
    acks = _acks(RECORDS)
    written = [w for w in _written(acks, 0.1) if not LOST_FROM <= w["in_offset"] < HALF]
    commit_at = START + QUARTER / RATE
    run = _run_dir(tmp_path / "broke", acks, _commit(commit_at, {0: HALF, 1: HALF}), written)

    lost = {"lost": 24}
    # 2 of 5; each explanation misses at its first play: the commit killed, the sends late
    player = TracedPlayer([run], [lost, {}, {}, lost, {}, {}, {}], reference={})
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 7  # type: ignore[method-assign]
    result = explorer.explore()
    assert not result.findings
    (intermittent,) = result.intermittent
    assert intermittent.broke == 2 and intermittent.explained == []


def test_a_break_later_than_faults_are_placed_is_aimed_at_from_the_latest_place(
    tmp_path: Path,
) -> None:
    """The commit that passed the lost inputs came after the last place a fault is drawn at
    (5 s of records before the end): the explanation waits from there for the next commit."""
    acks = _acks(RECORDS)
    commit_at = START + (RECORDS - 50) / RATE
    last = (RECORDS - 50) // 2
    written = [w for w in _written(acks, 0.1) if not last - 25 <= w["in_offset"] < last]
    run = _run_dir(tmp_path / "broke", acks, _commit(commit_at, {0: last, 1: last}), written)
    explorer = _explorer(ScriptedPlayer([], reference={}), tmp_path)
    drawn = explorer._draw()
    first, *_ = explorer._explanations(drawn, "lost", run)
    (fault,) = first.faults
    assert fault.after_acks == latest_ack(RECORDS) and fault.aim is not None
    assert fault.aim.at == commit_at
