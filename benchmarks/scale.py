"""Scale: one incident at ten times its records, and the catalog as pytest items two at a time.

1. ``kafka-replay run crash-restart-eos --scale 10 --report DIR`` (30,000 records instead of
   3,000, produced ten times as fast, the same six kills): per profile, the records
   acknowledged, the outputs, the checker's counts, the verdict and result, and whether the
   check is exact: every acknowledged input delivered or counted lost, unseen or a lost
   write, and every output an acknowledged input's delivery, a duplicate of one, or counted
   unexpected.
2. ``pytest -n 2 -k incident`` over the catalog: wall time beside the sum of the items' own
   times (from a JUnit file), and how many passed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

INCIDENT = "crash-restart-eos"
FACTOR = 10
TIMEOUT_S = 3600


def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        scaled_incident(Path(scratch) / "scaled")
        catalog_under_pytest(Path(scratch) / "junit.xml")


def scaled_incident(report_dir: Path) -> None:
    command = [
        sys.executable, "-m", "kafka_replay.cli", "run", INCIDENT, "--scale", str(FACTOR),
        "--report", str(report_dir),
    ]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    wall = time.monotonic() - started
    report = report_dir / "report.json"
    if not report.exists():
        raise RuntimeError(f"the scaled run wrote no report ({result.returncode}): {result.stderr}")
    print(f"scale: {INCIDENT} at {FACTOR}x its records, {wall:.0f} s wall time")
    for outcome in json.loads(report.read_text())["runs"]:
        check = json.loads((Path(outcome["run_dir"]) / "check.json").read_text())
        totals, anomalies = check["totals"], check["anomalies"]
        counts = {name: _count(value) for name, value in anomalies.items()}
        missing = sum(counts.get(n, 0) for n in ("lost", "unseen_at_deadline", "lost_write"))
        inputs_exact = totals["acknowledged"] == totals["delivered"] + missing
        outputs_exact = totals["output_records"] == (
            totals["delivered"] + counts.get("duplicate", 0) + counts.get("unexpected", 0)
        )
        print(
            f"  {outcome['profile']:<10} {outcome['result']:<12} passed={outcome['passed']} "
            f"verdict={outcome['verdict']} in {outcome['duration_s']:.0f} s"
        )
        print(
            f"    acknowledged {totals['acknowledged']}, outputs {totals['output_records']}, "
            f"delivered {totals['delivered']}, duplicates {counts.get('duplicate', 0)}, "
            f"lost {counts.get('lost', 0)}, unseen {counts.get('unseen_at_deadline', 0)}, "
            f"unexpected {counts.get('unexpected', 0)}; exact: inputs {inputs_exact}, "
            f"outputs {outputs_exact}"
        )


def _count(value: object) -> int:
    if isinstance(value, dict):
        return int(value.get("count", 0))
    return int(value) if isinstance(value, int) else 0


def _problems(case: ET.Element) -> int:
    return sum(1 for child in case if child.tag in ("failure", "error", "skipped"))


def catalog_under_pytest(junit: Path) -> None:
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2",
        "--pyargs", "kafka_replay_incidents", "-k", "incident", f"--junitxml={junit}",
    ]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    wall = time.monotonic() - started
    if not junit.exists():
        raise RuntimeError(f"pytest wrote no JUnit file ({result.returncode}):\n{result.stdout}")
    cases = ET.parse(junit).getroot().iter("testcase")
    times = [(case.get("name", ""), float(case.get("time", 0)), _problems(case)) for case in cases]
    passed = sum(1 for _, _, problems in times if problems == 0)
    items_s = sum(seconds for _, seconds, _ in times)
    print(f"scale: the catalog under pytest -n 2: {passed}/{len(times)} passed")
    print(f"  wall time {wall:.0f} s; the items took {items_s:.0f} s in all")
