"""A team's producer judged under load: the weak one found every time, the correct one never.

A finding that depends on the machine's load is no gate. This replays each producer incident
named (default: all of :data:`INCIDENTS`) [vulnerable] ``--runs`` times with each of two builds
of one Java service (``tests/apps/java/PlainApp.java``, compiled against the broker's
kafka-clients): its producer weakened as the incident needs (weak) and as a team writes it
(idempotent, acks=all), taking turns, while a CPU burner per core keeps the machine loaded.
Reported for each: how often it was found vulnerable, its symptom, and how often the fault
acted on the app's own writes (``producer-retry-duplicates``: all six of its Produce answers
lost, ``request_faults``; ``leader-loss-acks-one``: the leader killed with at least 20 of the
app's writes on it and not on the follower to be elected, the step's
``unreplicated_at_kill``).

    ./dev bench producer-findings [INCIDENT ...] --runs 10
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.test_any_app import compile_java_app


@dataclass(frozen=True)
class Finding:
    """What makes the service weak for an incident, what shows it, and the fault's action."""

    weak: str
    symptom: str
    acted: Callable[[dict[str, Any], Path], bool]
    acted_means: str


def _answers_lost(outcome: dict[str, Any], run_dir: Path) -> bool:
    return outcome["symptoms"].get("request_faults") == 6


def _killed_with_writes_on_the_leader_alone(outcome: dict[str, Any], run_dir: Path) -> bool:
    steps = (json.loads(line) for line in (run_dir / "events" / "steps.jsonl").open())
    kills = [s for s in steps if s.get("do") == "kill_broker" and "unreplicated_at_kill" in s]
    return bool(kills) and kills[0]["unreplicated_at_kill"] >= 20


INCIDENTS = {
    "producer-retry-duplicates": Finding(
        "--idempotence false", "output_send_duplicates", _answers_lost,
        "six of its Produce answers lost",
    ),
    "leader-loss-acks-one": Finding(
        "--acks 1 --idempotence false", "inputs_lost", _killed_with_writes_on_the_leader_alone,
        "the leader killed with 20 or more of its writes on it alone",
    ),
}  # fmt: skip


def _burn() -> None:
    while True:
        pass


def _replay(incident: str, app: str, report: Path) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", incident, "--profile", "vulnerable",
         "--app", app, "--guarantee", "at-least-once", "--report", str(report)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip
    path = report / "report.json"
    if not path.exists():
        raise RuntimeError(f"the replay wrote no report (see {report})")
    [outcome] = json.loads(path.read_text())["runs"]
    return outcome


def run(args: argparse.Namespace) -> None:
    unknown = set(args.incidents) - set(INCIDENTS)
    if unknown:
        raise SystemExit(
            f"producer-findings: no {', '.join(sorted(unknown))}; of {', '.join(INCIDENTS)}"
        )
    for incident in args.incidents or INCIDENTS:
        _findings(incident, INCIDENTS[incident], args)


def _findings(incident: str, finding: Finding, args: argparse.Namespace) -> None:
    burners = [
        multiprocessing.Process(target=_burn, daemon=True) for _ in range(os.cpu_count() or 2)
    ]
    services = {"weak": finding.weak, "correct": ""}
    seen: dict[str, list[tuple[dict[str, Any], bool]]] = {name: [] for name in services}
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as work:
        app = compile_java_app(Path(work), args.kafka_version)
        print(f"\nA Java service's producer on {incident} [vulnerable], {len(burners)} CPU burners")
        for burner in burners:
            burner.start()
        try:
            for round_ in range(args.runs):
                for name, flags in services.items():
                    report = Path(work) / f"{name}-{round_}"
                    outcome = _replay(incident, f"{app} {flags}".strip(), report)
                    acted = finding.acted(outcome, report / "runs" / f"{incident}-vulnerable")
                    seen[name].append((outcome, acted))
                    print(
                        f"  {round_ + 1:>2} {name:<8} {outcome['result']:<15} "
                        f"{finding.symptom} {outcome['symptoms'].get(finding.symptom)}, "
                        f"fault acted on its writes: {acted}, load {os.getloadavg()[0]:.1f}"
                    )
        finally:
            for burner in burners:
                burner.terminate()
                burner.join()
    for name, runs in seen.items():
        results = Counter(outcome["result"] for outcome, _ in runs)
        acted = sum(1 for _, did in runs if did)
        print(
            f"  {name}: found vulnerable {results.get('vulnerable', 0)} of {len(runs)} "
            f"({', '.join(f'{k} {v}' for k, v in results.items())}); "
            f"{finding.acted_means} in {acted} of {len(runs)}"
        )
