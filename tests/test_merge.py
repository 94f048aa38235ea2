"""``kafka-replay report OUT --merge DIR...``: shards' reports made the unsharded run's report.

The shards' directories are written as ``kafka-replay run --shard K/N --report DIR`` writes
them (``write_report`` with the outcomes and the context it gives), so nothing replays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kafka_replay import __version__
from kafka_replay.cli import main
from kafka_replay.playing.shards import Shard, parse_shard, pick, run_key
from kafka_replay.replay.settings import RunSettings
from kafka_replay.report.catalog_report import write_report
from kafka_replay.report.junit import junit_xml
from kafka_replay.report.merge import merge_shards
from kafka_replay.report.outcome import Outcome

INCIDENTS = ("zombie-commit", "deal-flood", "poison-pill")
PROFILES = ("vulnerable", "remediated")
EVERY_RUN = [run_key(i, p) for i in INCIDENTS for p in PROFILES]


def outcome(key: str, gate: str = "pass") -> Outcome:
    incident, profile = key.split()
    return Outcome(
        incident, profile, "reference", "at-least-once", "at-least-once",
        passed=gate == "pass", reproduced=profile == "vulnerable", anomalies={},
        symptoms={"reprocessed": 3}, duration_s=10.0 + len(key), run_dir="",
        result="reproduced" if profile == "vulnerable" else "cured",
        error="boom" if gate == "error" else None, applicable=gate != "n/a",
        reasons=["not here"] if gate == "n/a" else [],
    )  # fmt: skip


def write_shard(
    directory: Path,
    shard: str,
    keys: Sequence[str],
    gates: dict[str, str],
    history: bool = False,
    **settings: Any,
) -> Path:
    """A shard's report directory as ``run --shard`` writes it (with a history for each run, one
    the page draws: slower)."""
    outcomes = []
    for key in keys:
        run = outcome(key, gates.get(key, "pass"))
        run.run_dir = str(directory / "runs" / key.replace(" ", "-"))
        if history:
            Path(run.run_dir).mkdir(parents=True)
            (Path(run.run_dir) / "run.json").write_text("{}")
        outcomes.append(run)
    chosen = RunSettings({"shard": parse_shard(shard), "report": directory, **settings})
    context = {"kafka_version": "4.4.0", "backend": "embedded", "runs_kafka": True,
               "options": {"app": None}, "scale": 1, "settings": chosen.to_json(),
               "version": __version__, "sharded_from": EVERY_RUN}  # fmt: skip
    write_report(directory, outcomes, context)
    return directory


def shards(tmp_path: Path, gates: dict[str, str], history: bool = False) -> list[Path]:
    """The runs split in two as every shard splits them, each part's report written."""
    units = {key: [key] for key in EVERY_RUN}
    parts = [pick(Shard(k, 2), units, {}) for k in (1, 2)]
    return [write_shard(tmp_path / f"shard-{k}", f"{k}/2", part, gates, history)
            for k, part in enumerate(parts, start=1)]  # fmt: skip


#: The verdicts of a run, and the exit code of its merged report (that of ``run``).
GATES = [({}, 0), ({"deal-flood remediated": "FAIL"}, 1),
         ({"deal-flood remediated": "FAIL", "poison-pill vulnerable": "error"}, 2)]  # fmt: skip


def test_the_merged_report_is_the_unsharded_ones(tmp_path: Path) -> None:
    for at, (gates, code) in enumerate(GATES):
        out = tmp_path / f"merged-{at}"
        merging = [str(s) for s in shards(tmp_path / str(at), gates, history=code == 0)]
        assert main(["report", str(out), "--merge", *merging]) == code
        unsharded = [outcome(key, gates.get(key, "pass")) for key in EVERY_RUN]
        merged = json.loads((out / "report.json").read_text())
        for run, written in zip(unsharded, merged["runs"], strict=True):
            run.run_dir = written["run_dir"]  # where its shard wrote it when it has no history
            if code == 0:  # every history copied under the merged directory
                assert Path(run.run_dir) == out / "runs" / f"{run.incident}-{run.profile}"
                assert (Path(run.run_dir) / "run.json").is_file()
        assert merged["runs"] == [o.to_json() for o in unsharded]
        assert merged["passed"] == (code == 0) and merged["settings"]["shard"] is None
        assert [shard["shard"] for shard in merged["merged"]] == ["1/2", "2/2"]
        junit = (out / "junit.xml").read_text().split("<testsuites", 1)[1]
        assert junit == _junit(unsharded).split("<testsuites", 1)[1]
        assert (out / "report.md").is_file() and (out / "report.html").is_file()


def _junit(outcomes: list[Outcome]) -> str:
    import xml.etree.ElementTree as ET

    return ET.tostring(junit_xml(outcomes).getroot(), encoding="unicode")


def test_nothing_applied_is_judged_once_merged(tmp_path: Path) -> None:
    every = dict.fromkeys(EVERY_RUN, "n/a")
    with pytest.raises(ValueError, match="no run applied here"):
        _merged_code(tmp_path / "none-applies", every)
    assert _merged_code(tmp_path / "one-applies", {**every, EVERY_RUN[0]: "pass"}) == 0


def _merged_code(directory: Path, gates: dict[str, str]) -> int:
    from kafka_replay.report.gate import exit_code

    outcomes, context = merge_shards(shards(directory, gates), directory / "out")
    return exit_code(outcomes, context["settings"]["allow_not_applicable"])


def refusal(tmp_path: Path, case: str) -> list[Path]:
    """Shard directories that do not add up to one run, in the way ``case`` names."""
    one, two = EVERY_RUN[:3], EVERY_RUN[3:]
    a = write_shard(tmp_path / "a", "1/3" if case == "a-shard-missing" else "1/2", one, {})
    b = {
        "same-run-twice": lambda: write_shard(tmp_path / "b", "2/2", [*two, one[0]], {}),
        "same-shard-twice": lambda: write_shard(tmp_path / "b", "1/2", two, {}),
        "a-shard-missing": lambda: write_shard(tmp_path / "b", "3/3", two, {}),
        "other-settings": lambda: write_shard(tmp_path / "b", "2/2", two, {}, app="python -m x"),
        "not-a-shard": lambda: tmp_path,
        "given-twice": lambda: a,
    }[case]()
    return [a, b]


#: How each refusal reads, ``{a}`` and ``{b}`` the two directories given.
REFUSALS = {
    "same-run-twice": "run zombie-commit vulnerable is in two shards: {a} and {b}",
    "same-shard-twice": "{a} and {b} are both shard 1/2",
    "a-shard-missing": "shard 2/3 missing: give every shard's report directory",
    "other-settings": "{b} was run with other settings than {a} (--app): shards of one run",
    "not-a-shard": "{b} has no report.json",
    "given-twice": "{a} is given twice",
}


def test_shards_that_do_not_add_up_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for case, said in REFUSALS.items():
        a, b = refusal(tmp_path / case, case)
        out = tmp_path / case / "merged"
        assert main(["report", str(out), "--merge", str(a), str(b)]) == 2, case
        error = " ".join(capsys.readouterr().err.split())  # one line, however wide the terminal
        assert f"error: {said.format(a=a, b=b)}" in error, error
        assert not (out / "report.json").exists()
