"""One seed's exploration split over machines (``explore --shard K/N``) and joined again
(``kafka-replay report OUT --merge DIR...``), on scripted plays: which schedules each shard
plays, what its ``explore.json`` keeps, and the joined report."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_replay.cli import main
from kafka_replay.exploring.explorer import Explorer
from kafka_replay.exploring.families import choose_families
from kafka_replay.exploring.findings import write_report
from kafka_replay.exploring.record import MergeError, merge_explorations, read_record
from kafka_replay.exploring.schedule import RECORDS
from kafka_replay.playing.shards import Shard
from tests.test_exploring import APP, ScriptedPlayer


def _shard(tmp_path: Path, shard: Shard, yours: list, seed: int = 5, plays: int = 3) -> Path:
    """One shard's exploration on scripted plays, its report written to its own directory."""
    out = tmp_path / f"shard-{shard.index}"
    player = ScriptedPlayer(yours, reference={})
    explorer = Explorer(
        player, app=APP, guarantee="at-least-once", families=choose_families("app,requests"),
        seed=seed, budget_s=600, out_dir=out, work_dir=tmp_path / f"work-{shard.index}",
        search="random", shard=shard, progress=lambda line: None,
    )  # fmt: skip
    explorer.out_of_time = lambda: len(player.played) >= plays  # type: ignore[method-assign]
    result = explorer.explore()
    write_report(result, 600, out)
    return out


def test_each_shard_plays_its_own_share_of_the_seeds_schedules(tmp_path: Path) -> None:
    names = {}
    for k in (1, 2, 3):
        result, _, _ = read_record(_shard(tmp_path, Shard(k, 3), []) / "explore.json")
        names[k] = [tried.schedule for tried in result.tried]
    assert names[1] == ["explored-5-0", "explored-5-3", "explored-5-6"]
    assert names[2] == ["explored-5-1", "explored-5-4", "explored-5-7"]
    assert names[3] == ["explored-5-2", "explored-5-5", "explored-5-8"]


def test_an_exploration_is_kept_as_data_its_report_can_be_written_from(tmp_path: Path) -> None:
    lost = {"lost": 3}
    out = _shard(tmp_path, Shard(1, 1), [lost] * 5, plays=8)
    result, budget_s, spent_s = read_record(out / "explore.json")
    (finding,) = result.findings
    assert finding.kind == "lost" and finding.path == out / "lost-5-0.toml"
    assert finding.shrunk.faults == finding.drawn.faults and finding.drawn.layout.records == RECORDS
    assert budget_s == 600 and spent_s >= 0 and result.shard == "1/1"
    assert [t.service for t in result.tried[:7]] == ["yours"] * 5 + ["reference"] * 2


def test_the_shards_reports_are_joined_into_one_with_their_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _shard(tmp_path, Shard(1, 2), [])
    second = _shard(tmp_path, Shard(2, 2), [{"lost": 3}] * 5, plays=8)
    joined = tmp_path / "joined"
    assert main(["report", str(joined), "--merge", str(first), str(second)]) == 1
    result, _, _ = read_record(joined / "explore.json")
    assert [f.path for f in result.findings] == [joined / "lost-5-1.toml"]
    assert (joined / "lost-5-1.toml").read_text() == (second / "lost-5-1.toml").read_text()
    assert result.schedules == 3 + 1 and result.shard == "2 shards"
    report = (joined / "explore.md").read_text()
    assert "Joined from 2 shards" in report
    assert "explored-5-0" in report and "explored-5-1" in report
    assert "4 schedule(s)" in capsys.readouterr().err
    # without findings, the joined exploration exits 0
    assert main(["report", str(tmp_path / "held"), "--merge", str(first)]) == 2  # 1 of 2 shards
    alone = _shard(tmp_path / "alone", Shard(1, 1), [])
    assert main(["report", str(tmp_path / "held"), "--merge", str(alone)]) == 0


def test_shards_that_are_not_one_exploration_are_refused(tmp_path: Path) -> None:
    first = _shard(tmp_path, Shard(1, 2), [])
    other_seed = _shard(tmp_path / "other", Shard(2, 2), [], seed=6)
    with pytest.raises(MergeError, match=r"different seeds \(5, 6\): give each the same --seed"):
        merge_explorations([first, other_seed], tmp_path / "out")
    with pytest.raises(MergeError, match="the shards are 1/2: every shard of K/N once"):
        merge_explorations([first], tmp_path / "out")
    with pytest.raises(MergeError, match=r"has no explore\.json"):
        merge_explorations([first, tmp_path / "nothing"], tmp_path / "out")
