"""Stability: the catalog replayed N times, every verdict and signature symptom tallied.

A gate that flips is worse than none. Each round is one ``kafka-replay run`` of the chosen
incidents (``--jobs`` at a time, as CI would run them), in a fresh process. Reported per
incident and profile: how often it passed, the verdicts and results seen, and for each
symptom of the signature its min / median / max over the rounds with the margin to the
signature's threshold on the side the profile must stay (the vulnerable profile must meet
it, the remediated one must not). Any item that did not pass every round is flagged.

    ./dev bench stability --times 5 [--jobs 3] [INCIDENT ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from kafka_replay.definitions.catalog import incident_directories, load_incidents
from kafka_replay.definitions.model import Condition


def margin(condition: Condition, values: list[Any], must_hold: bool) -> str:
    """The closest any round came to the wrong side of ``condition``."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if isinstance(condition.value, bool) or len(numbers) != len(values) or not numbers:
        held = sum(1 for v in values if condition.holds(v) is True)
        return f"held {held}/{len(values)}"
    threshold = float(condition.value)
    below = condition.op in ("<", "<=")
    worst = max(numbers) if below == must_hold else min(numbers)
    return f"{(threshold - worst if below == must_hold else worst - threshold):+g}"


def _round(names: list[str], jobs: int, report: Path) -> tuple[list[dict[str, Any]], float]:
    target = names or ["--all"]
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", *target, "--jobs", str(jobs),
         "--report", str(report)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip
    wall = time.monotonic() - started
    path = report / "report.json"
    if not path.exists():
        raise RuntimeError(f"the round wrote no report (see {report})")
    return json.loads(path.read_text())["runs"], wall


def run(args: argparse.Namespace) -> None:
    incidents = load_incidents(tuple(incident_directories([])))
    names = list(args.incidents)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    walls = []
    with tempfile.TemporaryDirectory(prefix="kafka-replay-stability-") as scratch:
        for attempt in range(1, args.times + 1):
            outcomes, wall = _round(names, args.jobs, Path(scratch) / f"round-{attempt}")
            walls.append(wall)
            for outcome in outcomes:
                runs[(outcome["incident"], outcome["profile"])].append(outcome)
            passed = sum(1 for o in outcomes if o["passed"])
            print(f"round {attempt}/{args.times}: {passed}/{len(outcomes)} passed in {wall:.0f} s")
    print(
        f"\nrounds: {args.times}, --jobs {args.jobs}, median wall {statistics.median(walls):.0f} s"
    )
    print("\n| item | passed | verdicts | results | signature: min / median / max (margin) |")
    print("|---|---|---|---|---|")
    flips = []
    for (name, profile), seen in sorted(runs.items()):
        passed = sum(1 for o in seen if o["passed"])
        if passed != len(seen):
            flips.append(f"{name} [{profile}]")
        cells = []
        for condition in incidents[name].signature:
            values = [o["symptoms"].get(condition.symptom) for o in seen]
            shown = [v for v in values if v is not None]
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in shown)
            spread = (
                f"{min(shown)} / {statistics.median(shown):g} / {max(shown)}"
                if shown and numeric
                else ", ".join(f"{str(v).lower()} {n}" for v, n in Counter(values).items())
            )
            must_hold = profile == "vulnerable"
            cells.append(f"`{condition}`: {spread} ({margin(condition, values, must_hold)})")
        verdicts = ", ".join(f"{k} {v}" for k, v in Counter(o["verdict"] for o in seen).items())
        results = ", ".join(f"{k} {v}" for k, v in Counter(o["result"] for o in seen).items())
        print(
            f"| {name} [{profile}] | {passed}/{len(seen)} | {verdicts} | {results} | "
            + "<br>".join(cells)
            + " |"
        )
    print("\nflips: " + (", ".join(flips) if flips else "none"))
