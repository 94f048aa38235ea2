"""A team's producer judged under load: the weak one found every time, the correct one never.

A finding that depends on the machine's load is no gate. This replays
``producer-retry-duplicates`` [vulnerable] ``--runs`` times with each of two builds of one Java
service (``tests/apps/java/PlainApp.java``, compiled against the broker's kafka-clients): its
producer without idempotence (weak) and as a team writes it (idempotent, acks=all), taking
turns, while a CPU burner per core keeps the machine loaded. Reported for each: how often it
was found vulnerable, its ``output_send_duplicates``, and how often the fault acted on all six
of its Produce requests (``request_faults``).

    ./dev bench producer-findings --runs 10
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
from pathlib import Path
from typing import Any

from tests.test_any_app import compile_java_app

INCIDENT = "producer-retry-duplicates"
SERVICES = {"weak": "--idempotence false", "correct": ""}
ACTED = 6  # the Produce answers the incident loses for an app


def _burn() -> None:
    while True:
        pass


def _replay(app: str, report: Path) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", INCIDENT, "--profile", "vulnerable",
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
    burners = [
        multiprocessing.Process(target=_burn, daemon=True) for _ in range(os.cpu_count() or 2)
    ]
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in SERVICES}
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as work:
        app = compile_java_app(Path(work), args.kafka_version)
        print(f"\nA Java service's producer on {INCIDENT} [vulnerable], {len(burners)} CPU burners")
        for burner in burners:
            burner.start()
        try:
            for round_ in range(args.runs):
                for name, flags in SERVICES.items():
                    report = Path(work) / f"{name}-{round_}"
                    outcome = _replay(f"{app} {flags}".strip(), report)
                    seen[name].append(outcome)
                    symptoms = outcome["symptoms"]
                    print(
                        f"  {round_ + 1:>2} {name:<8} {outcome['result']:<15} "
                        f"output_send_duplicates {symptoms.get('output_send_duplicates')}, "
                        f"request_faults {symptoms.get('request_faults')}, "
                        f"load {os.getloadavg()[0]:.1f}"
                    )
        finally:
            for burner in burners:
                burner.terminate()
                burner.join()
    for name, outcomes in seen.items():
        results = Counter(o["result"] for o in outcomes)
        acted = sum(1 for o in outcomes if o["symptoms"].get("request_faults") == ACTED)
        found = results.get("vulnerable", 0)
        print(
            f"  {name}: found vulnerable {found} of {len(outcomes)} "
            f"({', '.join(f'{k} {v}' for k, v in results.items())}); "
            f"the fault acted on {ACTED} of its requests in {acted} of {len(outcomes)}"
        )
