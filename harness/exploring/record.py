"""An exploration kept as data (``explore.json`` beside its report), and explorations of one
seed's shards (``--shard K/N``) joined into one (``kafka-replay report OUT --merge DIR...``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_replay.playing.shards import parse_shard

from .explorer import Exploration, Finding, Intermittent, Tried
from .families import Layout
from .schedule import Fault, Schedule
from .windows import Window

RECORD = "explore.json"


class MergeError(ValueError):
    """Shards that do not make one exploration (its message names what is wrong)."""


def write_record(
    result: Exploration, budget_s: float, out_dir: Path, spent_s: float | None = None
) -> Path:
    """``explore.json`` in ``out_dir``: everything the report says, to merge shards from."""
    data = {
        **{f.name: getattr(result, f.name) for f in dataclasses.fields(result)},
        "tried": [dataclasses.asdict(t) for t in result.tried],
        "intermittent": [dataclasses.asdict(i) for i in result.intermittent],
        "findings": [_finding(f) for f in result.findings],
        "corpus": [[str(path), said] for path, said in result.corpus],
        "regressions": [str(path) for path in result.regressions],
        "report": None,
        "started": None,
        "spent_s": round(time.monotonic() - result.started if spent_s is None else spent_s, 1),
        "budget_s": budget_s,
    }
    path = out_dir / RECORD
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        **dataclasses.asdict(finding),
        "path": str(finding.path),
        "drawn": dataclasses.asdict(finding.drawn),
        "shrunk": dataclasses.asdict(finding.shrunk),
    }


def read_record(path: Path) -> tuple[Exploration, float, float]:
    """The exploration ``path`` keeps, its budget and the seconds it took."""
    data = json.loads(path.read_text())
    result = Exploration(
        data["seed"],
        tried=[Tried(**t) for t in data["tried"]],
        findings=[_read_finding(f) for f in data["findings"]],
        intermittent=[Intermittent(**i) for i in data["intermittent"]],
        search=data["search"],
        windows=dict(data["windows"]),
        apart=list(data["apart"]),
        corpus=[(Path(p), said) for p, said in data["corpus"]],
        regressions=[Path(p) for p in data["regressions"]],
        schedules=data["schedules"],
        shard=data["shard"],
    )
    return result, float(data["budget_s"]), float(data["spent_s"])


def _read_finding(data: Mapping[str, Any]) -> Finding:
    return Finding(
        **{
            **data,
            "path": Path(data["path"]),
            "drawn": _schedule(data["drawn"]),
            "shrunk": _schedule(data["shrunk"]),
        }
    )


def _schedule(data: Mapping[str, Any]) -> Schedule:
    faults = tuple(
        Fault(
            f["family"],
            f["after_acks"],
            tuple(f["steps"]),
            Window(**f["aim"]) if f["aim"] else None,
        )
        for f in data["faults"]
    )
    return Schedule(data["seed"], data["index"], Layout(**data["layout"]), faults)


def merge_explorations(shards: Sequence[Path], out: Path) -> tuple[Exploration, float, float]:
    """One exploration from its shards' directories (each ``explore --shard K/N --out DIR``
    of one seed, every shard once), their findings copied into ``out``: the joined result,
    the budget and the longest shard's seconds."""
    read = []
    for directory in shards:
        if not (directory / RECORD).exists():
            raise MergeError(
                f"{directory} has no {RECORD}: give the directories that "
                "`kafka-replay explore --shard K/N --out DIR` wrote"
            )
        read.append(read_record(directory / RECORD))
    seeds = {result.seed for result, _, _ in read}
    if len(seeds) > 1:
        raise MergeError(
            f"the shards explored different seeds ({', '.join(map(str, sorted(seeds)))}): "
            "give each the same --seed"
        )
    try:
        parts = [parse_shard(result.shard) for result, _, _ in read]
    except argparse.ArgumentTypeError as exc:  # a merged exploration is not a shard
        raise MergeError(f"not the shards of one exploration: {exc}") from exc
    count = parts[0].count
    given = sorted(part.index for part in parts)
    if {part.count for part in parts} != {count} or given != list(range(1, count + 1)):
        raise MergeError(
            f"the shards are {', '.join(str(p) for p in parts)}: every shard of K/N once is needed"
        )
    out.mkdir(parents=True, exist_ok=True)
    merged = Exploration(seeds.pop(), search=read[0][0].search, shard=f"{count} shards")
    windows: Counter[str] = Counter()
    for (result, _, _), directory in zip(read, shards, strict=True):
        for finding in result.findings:
            copied = out / finding.path.name
            shutil.copyfile(directory / finding.path.name, copied)
            merged.findings.append(dataclasses.replace(finding, path=copied))
        merged.tried += result.tried
        merged.intermittent += result.intermittent
        merged.apart += result.apart
        merged.corpus += result.corpus
        merged.regressions += result.regressions
        merged.schedules += result.schedules
        windows.update(result.windows)
    merged.windows = dict(windows)
    return merged, max(b for _, b, _ in read), max(s for _, _, s in read)
