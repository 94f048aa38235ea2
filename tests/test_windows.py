"""Windows of exposure read from made-up histories (pure), and an aimed exploration's order on
scripted plays: a play without faults first, then the schedules aimed at its windows, then
the random ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kafka_replay.exploring.exploration import explore
from kafka_replay.exploring.explorer import KINDS, Exploration, Tried
from kafka_replay.exploring.families import Layout, choose_families
from kafka_replay.exploring.findings import covered, write_report
from kafka_replay.exploring.schedule import EARLIEST, RECORDS, definition_text, draw, latest_ack
from kafka_replay.exploring.windows import (
    COMMIT_AHEAD,
    SENDS_AT_COMMIT,
    WORK_IN_HAND,
    WRITES_AHEAD,
    aimed_faults,
    read_windows,
    windows,
)
from kafka_replay.report.outcome import Outcome
from tests.test_exploring import ScriptedPlayer, _explorer

#: 80 acknowledgements a second from t = 100 s, over two partitions.
RATE = 80.0
START = 100.0
#: A quarter of a schedule's records: where a commit is placed in the explorations below.
QUARTER = RECORDS // 4


def _acks(count: int) -> list[dict]:
    return [
        {"kind": "ack", "ts": START + i / RATE, "topic": "in", "partition": i % 2, "offset": i // 2}
        for i in range(count)
    ]


def _commit(at_s: float, offsets: dict[int, int]) -> list[dict]:
    """One commit request: every partition's offset with the same commit time."""
    return [
        {
            "kind": "commit",
            "topic": "in",
            "partition": p,
            "offset": o,
            "commit_ts_ms": int(at_s * 1000),
        }
        for p, o in offsets.items()
    ]


def _quarter_commit(at_s: float) -> list[dict]:
    """A commit of both partitions' first halves of ``QUARTER`` inputs."""
    return _commit(at_s, {0: QUARTER // 2, 1: QUARTER // 2})


def _written(acks: list[dict], delay_s: float) -> list[dict]:
    """Each input's result, written ``delay_s`` after its acknowledgement."""
    return [
        {"in_partition": a["partition"], "in_offset": a["offset"],
         "out_ts_ms": int((a["ts"] + delay_s) * 1000)}
        for a in acks
    ]  # fmt: skip


def _kinds(found: list) -> dict[str, int]:
    return {w.kind: sum(x.inputs for x in found if x.kind == w.kind) for w in found}


def test_a_commit_before_the_writes_is_a_window_a_commit_after_them_is_not() -> None:
    acks = _acks(200)  # offsets 0..99 on each partition, acked by 102.5 s
    # the commit right after the last input, every result 3 s after its input: not written yet
    commit_first = windows(_commit(102.6, {0: 100, 1: 100}), _written(acks, 3.0), acks)
    assert _kinds(commit_first)[COMMIT_AHEAD] == 200
    assert WRITES_AHEAD not in _kinds(commit_first)
    # results 0.1 s after their inputs, the commit at 103.5 s: written ahead, none after
    correct = windows(_commit(103.5, {0: 100, 1: 100}), _written(acks, 0.1), acks)
    assert COMMIT_AHEAD not in _kinds(correct)
    assert _kinds(correct)[WRITES_AHEAD] == 200


def test_results_written_just_before_their_commit_may_still_be_unanswered() -> None:
    acks = _acks(40)  # acked from 100 s to 100.49 s
    found = windows(_commit(100.6, {0: 20, 1: 20}), _written(acks, 0.0), acks)
    sends = [w for w in found if w.kind == SENDS_AT_COMMIT]
    # written from 100 s on: those after 100.3 s were within 300 ms of the commit
    assert len(sends) == 1 and sends[0].inputs == sum(1 for a in acks if a["ts"] >= 100.3)


def test_a_commit_moves_past_what_the_partitions_last_commit_had_not() -> None:
    acks = _acks(40)
    commits = _commit(101.0, {0: 10, 1: 10}) + _commit(102.0, {0: 10, 1: 20})
    found = windows(commits, _written(acks, 5.0), acks)
    # the second commit moves partition 1 alone, from 10 to 20; partition 0 stays where it was
    assert sorted(w.inputs for w in found if w.kind == COMMIT_AHEAD) == [10, 20]


def test_work_in_hand_is_the_moment_most_inputs_waited_for_their_results() -> None:
    acks = _acks(160)  # two seconds of inputs
    found = windows([], _written(acks[:80], 0.05) + _written(acks[80:], 3.0), acks)
    (busiest,) = [w for w in found if w.kind == WORK_IN_HAND]
    assert busiest.inputs == 80 and busiest.at == acks[-1]["ts"]


def test_faults_aim_at_the_windows_the_guarantee_can_break_at() -> None:
    acks = _acks(1000)
    commit_at = START + 500 / RATE
    found = windows(
        _commit(commit_at, {0: 250, 1: 250}) + _commit(commit_at + 1, {0: 300, 1: 300}),
        _written(acks, 3.0),
        acks,
    )
    earliest, latest = int(1200 * EARLIEST), latest_ack(1200)  # 1,200 records: 96 to 800
    layout = Layout(2, 1, 1200)
    aims = aimed_faults(found, layout, "at-least-once", earliest, latest)
    killed = [steps[0] for w, family, steps in aims if w.kind == COMMIT_AHEAD]
    assert [(s["api"], s["action"], s["nth"]) for s in killed] == [
        ("OffsetCommit", "kill_sender", 1)
    ] * 2
    # placed half a second (40 acks) before the window: the commit at 500 acks from 461 on
    assert [w.acks for w, _, _ in aims if w.kind == COMMIT_AHEAD] == [461, 541]
    assert all(family in ("requests", "groups") for _, family, _ in aims)
    assert not [w for w, _, _ in aims if w.kind == WRITES_AHEAD]  # at-least-once allows them
    eos = aimed_faults(
        found, Layout(2, 1, 1200, transactional=True), "exactly-once", earliest, latest
    )
    apis = {steps[0]["api"] for w, _, steps in eos if w.kind == COMMIT_AHEAD}
    assert apis == {"OffsetCommit", "TxnOffsetCommit"}  # which of the two it sends is not known
    # a window before the earliest a fault is placed at is not aimed at
    late = aimed_faults(found, layout, "at-least-once", 600, latest)
    assert not [w for w, _, _ in late if w.kind == COMMIT_AHEAD or w.acks < 600]


class TracedPlayer(ScriptedPlayer):
    """A scripted player whose plays each leave a history: the next of ``runs``, then the last."""

    def __init__(self, runs: list[Path], *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.runs = list(runs)

    def _one(self, profile: str) -> Outcome:
        outcome = super()._one(profile)
        outcome.run_dir = str(self.runs.pop(0) if len(self.runs) > 1 else self.runs[0])
        return outcome


def _run_dir(path: Path, acks: list[dict], commits: list[dict], written: list[dict]) -> Path:
    (path / "events").mkdir(parents=True)
    for name, events in (("produce", acks), ("offsets", commits)):
        (path / "events" / f"{name}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in events)
        )
    (path / "deliveries.jsonl").write_text("".join(json.dumps(d) + "\n" for d in written))
    return path


def test_a_played_runs_windows_are_read_from_its_history(tmp_path: Path) -> None:
    acks = _acks(200)
    other = [{**c, "topic": "elsewhere"} for c in _commit(101.0, {0: 50})]  # another topic's
    run = _run_dir(
        tmp_path / "run", acks, _commit(102.6, {0: 100, 1: 100}) + other, _written(acks, 3.0)
    )
    assert _kinds(read_windows(run))[COMMIT_AHEAD] == 200
    assert read_windows(tmp_path / "nothing") == []


def test_an_aimed_exploration_plays_without_faults_first_then_at_its_windows(
    tmp_path: Path,
) -> None:
    acks = _acks(RECORDS)
    commit_at = START + QUARTER / RATE
    run = _run_dir(
        tmp_path / "baseline",
        acks,
        _quarter_commit(commit_at),
        _written(acks, 3.0),
    )

    player = TracedPlayer([run], [{}] * 4, reference={})
    explorer = _explorer(player, tmp_path, search="aimed")
    explorer.out_of_time = lambda: len(player.played) >= 3  # type: ignore[method-assign]
    result = explorer.explore()
    baseline, first_aimed = result.tried[0], result.tried[1]
    assert baseline.faults == 0 and not baseline.aim
    assert first_aimed.aim.startswith(COMMIT_AHEAD)
    assert result.windows[COMMIT_AHEAD] == 1 and result.search == "aimed"
    written = (tmp_path / "work" / f"{first_aimed.schedule}-play-2.toml").read_text()
    assert 'api = "OffsetCommit"' in written and 'action = "kill_sender"' in written


def test_the_last_line_says_what_the_service_held_under_by_what_was_aimed_at() -> None:
    result = Exploration(1)
    result.tried = [
        Tried("s0", 0, "yours", [], None, 1.0),
        Tried("s1", 1, "yours", [], None, 1.0, COMMIT_AHEAD),
        Tried("s2", 1, "yours", ["lost"], None, 1.0, WORK_IN_HAND),  # broke: not held
        Tried("s3", 2, "yours", [], None, 1.0),
        Tried("s3", 2, "reference", [], None, 1.0),  # the reference's plays are not counted
        Tried("s4", 2, "yours", [], "the Produce fault acted 0 of 1 times", 1.0),  # not played
    ]
    assert covered(result) == (
        "held under 3 schedule(s): 1 without faults, 1 aimed at commit ahead of writes, 1 at random"
    )


def test_a_corpus_is_replayed_first_and_one_that_still_reproduces_is_a_regression(
    tmp_path: Path,
) -> None:
    """Earlier findings kept in a corpus are played before any schedule, each under its
    vulnerable profile as its file says; one that reproduces is a regression."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    schedule = draw(5, 0, choose_families("app"))
    for name in ("lost-5-0", "lost-5-1"):
        (corpus / f"{name}.toml").write_text(
            definition_text(
                schedule, "{python} -m app", "at-least-once", dict([KINDS["lost"]]), name=name
            )
        )

    class Replaying(ScriptedPlayer):
        def play(self, plays: list[tuple[Path, str]]) -> list[Outcome]:
            if all(path.stem.startswith("lost-") for path, _ in plays):  # the corpus's
                self.corpus = [(path.name, profile) for path, profile in plays]
                return [_replayed("reproduced"), _replayed("not reproduced")]
            return super().play(plays)

    player = Replaying([{}], reference={})
    explorer = _explorer(player, tmp_path)
    explorer.corpus = corpus
    explorer.out_of_time = lambda: len(player.played) >= 1  # type: ignore[method-assign]
    result = explorer.explore()
    assert player.corpus == [("lost-5-0.toml", "vulnerable"), ("lost-5-1.toml", "vulnerable")]
    assert result.regressions == [corpus / "lost-5-0.toml"]
    said = dict((path.name, what) for path, what in result.corpus)
    assert said["lost-5-1.toml"] == "not reproduced: your service held"
    report = write_report(result, 600, tmp_path / "out").read_text()
    assert "- `lost-5-0.toml`: reproduced: your service still breaks under it" in report


def _replayed(result: str) -> Outcome:
    outcome = Outcome("x", "vulnerable", "app", "at-least-once", "", False, None, {}, {}, 1.0, "")
    outcome.result = result
    return outcome


def test_a_corpus_that_is_no_directory_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--corpus .*missing: no such directory"):
        explore(f"{sys.executable} -m tests.apps.flawed commit-first", "at-least-once",
                corpus=tmp_path / "missing", out=tmp_path / "out")  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_a_window_a_later_play_shows_first_is_aimed_at_next_over_its_faults(
    tmp_path: Path,
) -> None:
    """The play without faults shows no window; the first drawn schedule holds, but its play
    shows a commit ahead of its writes: the next schedule is the same faults and one aimed at
    that commit."""
    acks = _acks(RECORDS)
    commit_at = START + QUARTER / RATE
    opened = _run_dir(
        tmp_path / "opened",
        acks,
        _quarter_commit(commit_at),
        _written(acks, 3.0),
    )

    player = TracedPlayer([tmp_path / "quiet", opened, tmp_path / "quiet"], [{}] * 4, reference={})
    explorer = _explorer(player, tmp_path, search="aimed")
    explorer.out_of_time = lambda: len(player.played) >= 3  # type: ignore[method-assign]
    result = explorer.explore()
    baseline, drawn, steered = result.tried
    assert baseline.faults == 0 and result.windows == {}
    assert not drawn.aim and steered.aim == COMMIT_AHEAD
    assert steered.faults == drawn.faults + 1
    written = (tmp_path / "work" / f"{steered.schedule}-play-3.toml").read_text()
    assert 'api = "OffsetCommit"' in written and 'action = "kill_sender"' in written
