"""Exploration: services with a known defect, and one without, each explored on a budget.

For each service: whether a finding came, how long it took, how many plays, the drawn and
shrunk sizes, and the written definition replayed ``--times`` times (its vulnerable profile,
which must reproduce). The correct exactly-once service must give no finding; the number of
schedules it survived is printed.

    ./dev bench explore [--budget-s 900] [--times 3] [--jobs 2] [--families NAMES] [SERVICE ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_replay.exploring.exploration import explore

#: name -> (the service, its guarantee, the seed); every one but the last has a defect.
SERVICES: dict[str, tuple[str, str, int]] = {
    "commit-first": ("{python} -m tests.apps.flawed commit-first", "at-least-once", 1),
    "retrying-forwarder": ("{python} -m tests.apps.flawed retrying", "exactly-once", 2),
    "non-owner-commits": (
        "{python} -m kafka_replay_incidents.apps.periodic_committer --commit-every-s 1 "
        "--work-ms 50", "exactly-once", 3,
    ),
    "buffering": ("{python} -m tests.apps.flawed buffering", "at-least-once", 4),
    "latest-start": ("{python} -m tests.apps.flawed latest-start", "at-least-once", 5),
    "correct": ("{python} -m kafka_replay_incidents.apps.eos_processor", "exactly-once", 6),
}  # fmt: skip


def _replays(out: Path, name: str, times: int) -> int:
    reproduced = 0
    for _ in range(times):
        done = subprocess.run(
            [sys.executable, "-m", "kafka_replay.cli", "run", "--incidents", str(out), name,
             "--profile", "vulnerable"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        reproduced += "reproduced (vulnerable)" in done.stdout
    return reproduced


def run(args: argparse.Namespace) -> None:
    chosen = args.incidents or list(SERVICES)
    unknown = set(chosen) - set(SERVICES)
    if unknown:
        raise SystemExit(
            f"explore: no service {', '.join(sorted(unknown))}; of {', '.join(SERVICES)}"
        )
    rows = []
    for name in chosen:
        app, guarantee, seed = SERVICES[name]
        out = Path(tempfile.mkdtemp(prefix=f"explore-{name}-"))
        load = os.getloadavg()[0]
        started = time.monotonic()
        result = explore(
            app, guarantee, budget_s=args.budget_s, seed=seed, out=out, jobs=args.jobs,
            families=args.families,
            progress=lambda line, n=name: print(f"[{n}] {line}", flush=True),
        )  # fmt: skip
        spent = time.monotonic() - started
        if result.findings:
            finding = result.findings[0]
            replayed = _replays(out, finding.path.stem, args.times)
            rows.append(
                f"| {name} | {guarantee} | {finding.kind} | {finding.found_s:.0f} s | "
                f"{len(result.tried)} | {len(finding.drawn.faults)} -> {len(finding.shrunk.faults)}"
                f" | {replayed}/{args.times} | {spent:.0f} s | {load:.1f} |"
            )
        else:
            rows.append(
                f"| {name} | {guarantee} | none in {result.schedules} schedules | - | "
                f"{len(result.tried)} | - | - | {spent:.0f} s | {load:.1f} |"
            )
    print("| service | guarantee | finding | found after | plays | faults drawn -> shrunk | "
          "replays reproduced | time | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
