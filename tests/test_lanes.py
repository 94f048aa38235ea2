"""Lanes of ``--jobs``: a run checked while the next one plays, each on a cluster of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_replay.cluster.pool import ClusterPool, ClusterSpec
from kafka_replay.playing.parallel import PLAYED, run_side_by_side


def test_a_borrowed_cluster_is_no_one_elses_until_given_back(tmp_path: Path) -> None:
    pool = ClusterPool(tmp_path, max_live=1)
    spec = ClusterSpec.of()
    try:
        first = pool.borrow(spec)
        second = pool.borrow(spec)  # the first is out: a second of the same spec starts
        assert second is not first
        assert all(node.alive() for node in (*first.nodes, *second.nodes))
        pool.give_back(first)
        assert pool.borrow(spec) is first  # back, and taken again rather than a third started
        pool.give_back(first)
        pool.give_back(second)
        other = pool.borrow(ClusterSpec.of(broker_config={"log.retention.ms": "600000"}))
        assert other is not first and other is not second
        # beyond max_live, clusters no one borrows are stopped when another starts
        assert not any(node.alive() for node in (*first.nodes, *second.nodes))
    finally:
        pool.close()


def test_a_lane_checks_one_run_while_the_next_one_plays(tmp_path: Path) -> None:
    outcomes = run_side_by_side(
        ["producer-retry-duplicates"], [], ["vulnerable", "remediated"], 1, tmp_path
    )
    assert [(o.profile, o.result) for o in outcomes] == [
        ("vulnerable", "reproduced"),
        ("remediated", "cured"),
    ]
    runs = sorted(
        (Path(o.run_dir) for o in outcomes),
        key=lambda run: json.loads((run / "run.json").read_text())["started"],
    )
    earlier, later = runs
    later_started = json.loads((later / "run.json").read_text())["started"]
    earlier_concluded = (earlier / "outcome.json").stat().st_mtime
    assert later_started < earlier_concluded  # the later one's steps ran beside the check
    assert not any((run / PLAYED).exists() for run in runs)  # the lane's word, once heard
    assert all(o.stage_s["checker"] > 0 for o in outcomes)


def test_a_failed_warm_up_leaves_the_check_to_start_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from kafka_replay.checker import warm_up
    from kafka_replay.playing.session import CatalogSession

    def broken(spark: object, within: Path) -> None:
        raise RuntimeError("no room for the driver")

    monkeypatch.setattr(warm_up, "warm_up", broken)
    monkeypatch.setattr(CatalogSession, "spark", property(lambda self: None))
    with CatalogSession(tmp_path) as session:
        session.warm_up()  # logged, not raised: the lane goes on to its runs
    assert "no room for the driver" in caplog.text


def test_a_warm_up_outliving_its_interrupted_lane_starts_no_spark(tmp_path: Path) -> None:
    """A lane closed while its warm-up thread has not yet asked for Spark: the thread's ask is
    refused, so no Spark starts after the lane stopped and nothing is written."""
    from kafka_replay.playing.session import CatalogSession, SessionClosed

    session = CatalogSession(tmp_path / "work")
    session.close()
    session.warm_up()  # quietly: the lane is on its way out
    with pytest.raises(SessionClosed):
        _ = session.spark
    assert not list(tmp_path.rglob("warm-up-*"))
