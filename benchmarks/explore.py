"""Exploration: services with a known defect, and one without, each explored on a budget.

For each service and each search (aimed, then random, on the same seed): whether a finding
came, the plays and seconds until a play first broke the service and until the finding was
written, the drawn and shrunk sizes, the written definition replayed ``--times`` times (its
vulnerable profile, which must reproduce), and a play's mean seconds. The correct exactly-once
service must give no finding; the number of schedules it survived is printed.

    ./dev bench explore [--budget-s 900] [--times 5] [--jobs 2] [--families NAMES]
        [--search aimed,random] [SERVICE ...]
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
    "fire-and-forget": ("{python} -m tests.apps.flawed fire-and-forget", "at-least-once", 7),
    "drop-on-revoke": ("{python} -m tests.apps.flawed drop-on-revoke", "at-least-once", 8),
    "acks-one": ("{python} -m tests.apps.flawed acks-one", "at-least-once", 9),
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
    searches = [search.strip() for search in args.search.split(",") if search.strip()]
    rows = []
    for name in chosen:
        for search in searches:
            rows.append(_explored(name, search, args))
    print("| service | guarantee | search | finding | plays to the first break | seconds to it | "
          "found after | plays | faults drawn -> shrunk | replays reproduced | mean play | "
          "time | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def _explored(name: str, search: str, args: argparse.Namespace) -> str:
    """One exploration of service ``name`` with ``search``: its row."""
    app, guarantee, seed = SERVICES[name]
    out = Path(tempfile.mkdtemp(prefix=f"explore-{name}-{search}-"))
    load = os.getloadavg()[0]
    started = time.monotonic()
    result = explore(
        app, guarantee, budget_s=args.budget_s, seed=seed, out=out, jobs=args.jobs,
        families=args.families, search=search,
        progress=lambda line: print(f"[{name} {search}] {line}", flush=True),
    )  # fmt: skip
    spent = time.monotonic() - started
    yours = [t for t in result.tried if t.service == "yours"]
    broke = next((i for i, t in enumerate(yours) if t.kinds), None)
    first = "-" if broke is None else str(broke + 1)
    to_it = "-" if broke is None else f"{yours[broke].at_s:.0f} s"
    mean = sum(t.seconds for t in result.tried) / max(1, len(result.tried))
    tail = f"{mean:.1f} s | {spent:.0f} s | {load:.1f} |"
    if not result.findings:
        return (
            f"| {name} | {guarantee} | {search} | none in {result.schedules} schedules | {first} "
            f"| {to_it} | - | {len(result.tried)} | - | - | {tail}"
        )
    finding = result.findings[0]
    replayed = _replays(out, finding.path.stem, args.times)
    return (
        f"| {name} | {guarantee} | {search} | {finding.kind} | {first} | {to_it} | "
        f"{finding.found_s:.0f} s | {len(result.tried)} | {len(finding.drawn.faults)} -> "
        f"{len(finding.shrunk.faults)} | {replayed}/{args.times} | {tail}"
    )
