"""Shards' reports as one: what ``kafka-replay report OUT --merge DIR...`` writes.

Each ``kafka-replay run --shard K/N --report DIR`` reports its own runs and names the runs every
shard split (``sharded_from``). The merge gives the report the unsharded run would have: its
runs in the unsharded order, their outcomes as the shards judged them, and each run's history
copied under ``OUT/runs/`` so that the merged directory stands alone (one artifact). It refuses
what would not add up to that run: a shard missing or given twice, a run in two shards or in
none, shards of other runs or other settings.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .html_report import locate
from .outcome import Outcome

#: Settings a shard has its own of: which part it is, where it writes, how many lanes it used.
PER_SHARD = frozenset({"shard", "shard_times", "report", "junit", "jobs"})
#: ``report.json`` keys a shard writes about its own runs; every other one must be the same.
OWN_KEYS = frozenset({"generated", "passed", "runs", "remediated_over_vulnerable"})
Report = dict[str, Any]


def read_shard(directory: Path) -> Report:
    """A shard's ``report.json``; a ValueError for a directory that holds none."""
    path = directory / "report.json"
    if not path.is_file():
        raise ValueError(
            f"{directory} has no report.json: give the --report DIR of each "
            "`kafka-replay run --shard K/N` (a shard that was refused or stopped writes none)"
        )
    report: Report = json.loads(path.read_text())
    if not (report.get("settings") or {}).get("shard") or "sharded_from" not in report:
        raise ValueError(f"{directory}: its report is not a shard's (run without --shard K/N)")
    return report


def shard_of(report: Mapping[str, Any]) -> tuple[int, int]:
    """``(K, N)`` of the shard that wrote ``report``."""
    index, _, count = str(report["settings"]["shard"]).partition("/")
    return int(index), int(count)


def _setup(report: Mapping[str, Any]) -> dict[str, Any]:
    """What must be the same in every shard: the report's context, settings but their own."""
    setup = {key: value for key, value in report.items() if key not in OWN_KEYS}
    setup["settings"] = {k: v for k, v in report["settings"].items() if k not in PER_SHARD}
    return setup


def _differences(one: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """The settings (as options) and other context keys in which two setups differ."""
    named = [
        f"--{key.replace('_', '-')}"
        for key in sorted({*one["settings"], *other["settings"]})
        if one["settings"].get(key) != other["settings"].get(key)
    ]
    rest = sorted(k for k in {*one, *other} - {"settings"} if one.get(k) != other.get(k))
    return named + rest


def check_shards(reports: Mapping[Path, Report]) -> None:
    """Refuse shards that do not add up to one run (ValueError naming the directories)."""
    (first_dir, first), *_ = reports.items()
    count = shard_of(first)[1]
    seen: dict[int, Path] = {}
    for directory, report in reports.items():
        index, total = shard_of(report)
        if total != count:
            raise ValueError(
                f"{directory} is shard {index}/{total} but {first_dir} one of {count}: the shards "
                "of one run are all K/N with the same N"
            )
        if index in seen:
            raise ValueError(f"{seen[index]} and {directory} are both shard {index}/{count}")
        seen[index] = directory
        differ = _differences(_setup(first), _setup(report))
        if differ:
            raise ValueError(
                f"{directory} was run with other settings than {first_dir} "
                f"({', '.join(differ)}): shards of one run differ in --shard, --shard-times, "
                "--report, --junit and --jobs only"
            )
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise ValueError(f"shard {', '.join(missing)} missing: give every shard's report directory")
    _check_runs(reports, first["sharded_from"])


def _check_runs(reports: Mapping[Path, Report], every_run: Sequence[str]) -> None:
    """Each run of the split in exactly one shard's report."""
    where: dict[str, Path] = {}
    for directory, report in reports.items():
        for run in report["runs"]:
            key = f"{run['incident']} {run['profile']}"
            if key in where:
                raise ValueError(f"run {key} is in two shards: {where[key]} and {directory}")
            if key not in every_run:
                raise ValueError(f"{directory} has run {key}, which the shards did not split")
            where[key] = directory
    missing = [key for key in every_run if key not in where]
    if missing:
        raise ValueError(f"no shard's report has run {', '.join(missing)}")


def _copy_history(directory: Path, run: Report, out: Path) -> Report:
    """The run with its history copied under ``out/runs/`` (left as it is when not found)."""
    history = locate(directory, run)
    if history is None:
        return run
    copy = out / "runs" / history.name
    if history.resolve() != copy.resolve():
        shutil.copytree(history, copy, dirs_exist_ok=True)
    return {**run, "run_dir": str(copy)}


def merge_shards(directories: Sequence[Path], out: Path) -> tuple[list[Outcome], Report]:
    """The outcomes, in the unsharded order, and the report context of the shards' reports
    in ``directories``, their histories copied under ``out``; ValueError if they do not add up."""
    resolved = [d.resolve() for d in directories]
    if out.resolve() in resolved:
        raise ValueError(f"{out} is one of the shards: merge into a directory of its own")
    twice = next(
        (d for d, r in zip(directories, resolved, strict=True) if resolved.count(r) > 1), None
    )
    if twice is not None:
        raise ValueError(f"{twice} is given twice: give each shard's report directory once")
    reports = {directory: read_shard(directory) for directory in directories}
    check_shards(reports)
    first = next(iter(reports.values()))
    order = {key: at for at, key in enumerate(first["sharded_from"])}
    runs = [_copy_history(d, run, out) for d, report in reports.items() for run in report["runs"]]
    runs.sort(key=lambda run: order[f"{run['incident']} {run['profile']}"])
    context = {k: v for k, v in first.items() if k not in OWN_KEYS and k != "sharded_from"}
    context["settings"] = {
        **first["settings"],
        "shard": None,
        "shard_times": None,
        "report": str(out),
        "junit": str(out / "junit.xml"),
    }
    context["merged"] = sorted(
        ({"shard": r["settings"]["shard"], "report": str(d)} for d, r in reports.items()),
        key=lambda shard: shard_of({"settings": shard}),
    )
    return [Outcome.from_json(run) for run in runs], context
