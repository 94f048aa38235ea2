"""Shards: one catalog run split over N machines (``--shard K/N``), each choosing its part alone.

No coordinator hands runs out: every shard computes the same split from the same inputs and
keeps its own part. The split balances time, because a shard finishes when its slowest part
does: the runs, longest first (ties by name), each go to the shard with the least time so far
(ties: the lower shard), which leaves no shard more than the longest run behind another. Run
times come from an earlier ``report.json`` when given (``--shard-times``), else from the
catalog's ``durations.json``; a run neither knows (a team's own incident) weighs the median of
those known, and when none is known every run weighs the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_replay.definitions.catalog import catalog_dir

#: The catalog's run times, beside its definitions: ``{"incident profile": seconds}``.
DURATIONS_FILE = "durations.json"


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``, counted from 1 (``--shard 2/3``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``K/N``; anything else is refused in words argparse prefixes with the option's name."""
    index, slash, count = text.partition("/")
    if not (slash and index.strip().isdigit() and count.strip().isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N (shard K of N, e.g. 2/3)")
    shard = Shard(int(index), int(count))
    if shard.count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: N must be 1 or more (shard K of N)")
    if not 1 <= shard.index <= shard.count:
        raise argparse.ArgumentTypeError(f"{text!r}: K must be 1 to {shard.count} (shard K of N)")
    return shard


def run_key(incident: str, profile: str) -> str:
    """A run's name in ``durations.json`` and :mod:`.parallel`'s cache."""
    return f"{incident} {profile}"


def report_durations(report: Mapping[str, object]) -> dict[str, float]:
    """Each run's seconds in a ``report.json``, by :func:`run_key`."""
    runs = report.get("runs")
    if not isinstance(runs, list):
        raise ValueError("it has no list of runs")
    return {run_key(r["incident"], r["profile"]): float(r["duration_s"]) for r in runs}


def times_file(path: Path) -> Path:
    """The ``report.json`` that ``--shard-times`` names: the file, or the one in a directory."""
    return path / "report.json" if path.is_dir() else path


def read_times(path: Path, flag: str = "--shard-times") -> dict[str, float]:
    """The run times of an earlier report; a ValueError naming ``flag`` for a file with none.
    Read when the split is made, before any broker starts."""
    try:
        return report_durations(json.loads(times_file(path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{flag} {path}: not a report.json of kafka-replay run ({exc})") from None


def known_durations(times: Path | None = None, flag: str = "--shard-times") -> dict[str, float]:
    """The catalog's run times, with those of ``times`` (an earlier report, given as ``flag``)
    over them."""
    shipped: dict[str, float] = {}
    catalog = catalog_dir()
    if catalog is not None and (catalog / DURATIONS_FILE).is_file():
        shipped = json.loads((catalog / DURATIONS_FILE).read_text())
    return {**shipped, **(read_times(times, flag) if times else {})}


def weights(units: Mapping[str, Sequence[str]], known: Mapping[str, float]) -> dict[str, float]:
    """Each unit's seconds: the sum of its runs' (``units``: a unit's runs by :func:`run_key`).
    A run not ``known`` weighs the median of the known runs among them, 1 when none is."""
    runs = {run for its in units.values() for run in its}
    found = [known[run] for run in sorted(runs) if run in known]
    guess = statistics.median(found) if found else 1.0
    return {unit: sum(known.get(run, guess) for run in its) for unit, its in units.items()}


def split(weighted: Mapping[str, float], count: int) -> list[list[str]]:
    """``count`` shards of the units: longest first (ties by name), each to the shard with the
    least weight so far (ties: the lower one)."""
    shards: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for unit in sorted(weighted, key=lambda name: (-weighted[name], name)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        shards[lightest].append(unit)
        loads[lightest] += weighted[unit]
    return shards


def pick(shard: Shard, units: Mapping[str, Sequence[str]], known: Mapping[str, float]) -> list[str]:
    """The units of ``shard``, in the order given. A unit is what one shard replays whole: a run
    (``kafka-replay run``), a pytest item, an incident with both sides (``compare``); ``units``
    names each one's runs (:func:`run_key`), whose ``known`` seconds weigh it."""
    mine = set(split(weights(units, known), shard.count)[shard.index - 1])
    return [unit for unit in units if unit in mine]


def write_durations(path: Path, report: Path) -> Path:
    """Keep the run times of ``report`` (a report.json or its directory) in ``path``, in
    ``durations.json``'s form, over the runs it holds already: one line a run, sorted, in tenths
    of a second. A run that broke is left out: its time is not a run's."""
    runs = json.loads(times_file(report).read_text())["runs"]
    times = report_durations({"runs": [run for run in runs if not run.get("error")]})
    kept = json.loads(path.read_text()) if path.exists() else {}
    merged = {run: round(seconds, 1) for run, seconds in sorted({**kept, **times}.items())}
    path.write_text(json.dumps(merged, indent=1) + "\n")
    return path
