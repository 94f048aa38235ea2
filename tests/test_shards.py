"""``--shard K/N``: the split (pure), and how ``run``, ``compare``, pytest and the action take it.

Nothing here replays: the split is pure logic, a bad value is refused by the parser, pytest's
shards are read from ``--collect-only``, and a shard no run falls to writes its empty report
before any broker would start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_replay.cli import main
from kafka_replay.playing.shards import (
    Shard,
    known_durations,
    pick,
    run_key,
    split,
    weights,
    write_durations,
)
from tests.test_action import dry_run

ROOT = Path(__file__).resolve().parent.parent
#: Runs of unequal length, as a catalog's are (seconds).
TIMES = {f"incident-{i} {profile}": float((i * 37) % 23 + 1 + (profile == "vulnerable") * 9)
         for i in range(13) for profile in ("vulnerable", "remediated")}  # fmt: skip


def units(times: dict[str, float]) -> dict[str, list[str]]:
    return {run: [run] for run in times}


def test_every_run_is_in_one_shard_and_shards_differ_by_less_than_the_longest() -> None:
    for count in (1, 2, 3, 5, 30):
        shards = [pick(Shard(k, count), units(TIMES), TIMES) for k in range(1, count + 1)]
        every = [run for shard in shards for run in shard]
        assert sorted(every) == sorted(TIMES), count  # each run once
        loads = [sum(TIMES[run] for run in shard) for shard in shards]
        assert max(loads) - min(loads) <= max(TIMES.values()), (count, loads)
        backwards = dict(reversed(units(TIMES).items()))  # another machine, another order
        again = [set(pick(Shard(k, count), backwards, TIMES)) for k in range(1, count + 1)]
        assert again == [set(shard) for shard in shards], count


def test_longest_first_ties_by_name_each_to_the_lightest_shard() -> None:
    weighted = {"b": 5.0, "a": 5.0, "c": 4.0, "d": 1.0, "e": 1.0}
    assert split(weighted, 2) == [["a", "c"], ["b", "d", "e"]]


def test_an_unknown_run_weighs_the_median_and_nothing_known_weighs_the_same() -> None:
    known = {"a x": 10.0, "b x": 20.0, "c x": 90.0, "elsewhere x": 1000.0}
    chosen = {"a": ["a x"], "b": ["b x"], "c": ["c x"], "team": ["team x", "team y"]}
    assert weights(chosen, known) == {"a": 10.0, "b": 20.0, "c": 90.0, "team": 40.0}
    assert weights({"a": ["a x"], "b": ["b x", "b y"]}, {}) == {"a": 1.0, "b": 2.0}


def report(path: Path, times: dict[str, float]) -> Path:
    runs = [{"incident": key.split()[0], "profile": key.split()[1], "duration_s": seconds}
            for key, seconds in times.items()]  # fmt: skip
    path.mkdir(parents=True, exist_ok=True)
    (path / "report.json").write_text(json.dumps({"runs": runs}))
    return path


def test_an_earlier_reports_times_weigh_the_runs_over_the_catalogs(tmp_path: Path) -> None:
    shipped = known_durations()
    assert all(seconds > 0 for seconds in shipped.values())
    runs = [run_key("zombie-commit", "vulnerable"), "deal-flood vulnerable", "team-own x"]
    earlier = {runs[0]: 5000.0, runs[2]: 10.0}
    times = known_durations(report(tmp_path, earlier))  # a directory, or its file
    assert times == known_durations(tmp_path / "report.json")
    assert times == {**shipped, **earlier}
    some = {run: [run] for run in runs}
    assert pick(Shard(1, 2), some, earlier) == [runs[0]]  # alone: it outweighs the rest


def test_durations_are_written_from_a_report_over_those_kept(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"old x": 3.0, "a vulnerable": 1.0}))
    write_durations(path, report(tmp_path / "out", {"a vulnerable": 12.345, "b remediated": 7.0}))
    assert json.loads(path.read_text()) == {"a vulnerable": 12.3, "b remediated": 7.0, "old x": 3.0}


def test_a_bad_shard_is_refused_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    compare = ["compare", "--all", "--baseline", "kafka=4.0.2", "--candidate", "kafka=4.4.0"]
    for value in ("0/3", "4/3", "x", "1/0"):
        for command in (["run", "--all"], compare):
            with pytest.raises(SystemExit) as exited:
                main([*command, "--shard", value])
            assert exited.value.code == 2
            error = capsys.readouterr().err
            assert f"argument --shard: '{value}'" in error and "K" in error, error


def test_the_actions_shard_input_is_passed_on() -> None:
    assert dry_run(REPLAY_SHARD="2/3")[-2:] == ["--shard", "2/3"]


def collected(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "incidents", "tests/test_run_settings.py", *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_pytest_deselects_the_catalog_items_of_other_shards(tmp_path: Path) -> None:
    heavy = "incident[zombie-commit-remediated]"  # alone in a shard: it outweighs all the rest
    names = [path.stem for path in (ROOT / "incidents").glob("*.toml")]
    light = {run_key(name, p): 1.0 for name in names for p in ("vulnerable", "remediated")}
    times = report(tmp_path, {**light, run_key("zombie-commit", "remediated"): 1e6})
    every, shards = set(), []
    for k in (1, 2):
        done = collected("--replay-shard", f"{k}/2", "--replay-shard-times", str(times))
        assert done.returncode == 0, done.stdout + done.stderr
        ids = [line for line in done.stdout.splitlines() if "::" in line]
        assert sum("tests/test_run_settings.py::" in i for i in ids) > 5  # others left alone
        shards.append({i.split("::")[1] for i in ids if i.startswith("incidents/")})
        every |= shards[-1]
    assert shards[0] == {heavy} and heavy not in shards[1]
    assert len(every) == len(light)
    refused = collected("--replay-shard", "3/2")
    assert refused.returncode != 0 and "--replay-shard: '3/2'" in refused.stderr


def test_shard_times_that_are_no_report_are_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "zombie-commit", "--shard", "1/2", "--shard-times", str(tmp_path)]) == 2
    assert f"--shard-times {tmp_path}: not a report.json" in capsys.readouterr().err


def test_a_shard_no_run_falls_to_passes_with_an_empty_report(tmp_path: Path) -> None:
    out = tmp_path / "shard-2"
    done = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", "zombie-commit", "--profile",
         "remediated", "--shard", "2/2", "--report", str(out), "--junit", str(out / "junit.xml")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shard 2/2: 0 of the 1 runs (none falls to this shard" in done.stderr
    written = json.loads((out / "report.json").read_text())
    assert written["runs"] == [] and written["sharded_from"] == ["zombie-commit remediated"]
    assert written["settings"]["shard"] == "2/2"
    assert 'tests="0"' in (out / "junit.xml").read_text()


def test_a_compare_shard_nothing_falls_to_writes_an_empty_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    count = len(list((ROOT / "incidents").glob("*.toml"))) + 1  # more shards than incidents
    argv = ["compare", "--all", "--baseline", "kafka=4.0.2", "--candidate", "kafka=4.4.0",
            "--shard", f"{count}/{count}", "--report", str(tmp_path), "--junit",
            str(tmp_path / "junit.xml")]  # fmt: skip
    assert main(argv) == 0
    assert f"shard {count}/{count}: 0 of the {count - 1} incidents" in capsys.readouterr().err
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["regressions"] == 0 and written["candidates"][0]["items"] == []
    assert not (tmp_path / "baseline").exists()  # nothing replayed
