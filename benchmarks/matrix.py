"""The matrix tier: the suite's tests marked ``matrix``, which ``./dev test`` (CI) leaves out.

CI keeps one real run of each capability (docs/benchmarks.md names which); the matrices run
here: the catalog against apps in other languages, every payload under every incident and
profile, real Tansu and the catalog on it, image apps on both backends, each service shape, the
JVM billing service under every database incident, more kill moments under open transactions,
the JVM reference apps' other profiles, the older Kafka releases, a team's JVM app from the
installed wheel and its definitions from the command line, pytest's workers on one Spark server
and the checker on a standalone Spark cluster, the engine's lost Produce answers, a Flink job's
local cluster killed and restored, a pipeline's service explored in its place.
Each test asserts its verdicts, so a wrong one fails this benchmark; it prints every test's
result and time, and the worker-seconds each group took.

    ./dev bench matrix                  # every group (builds Tansu first, once)
    ./dev bench matrix any-app tansu    # some groups
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

#: group name -> the test files whose matrix tests it runs
GROUPS = {
    "any-app": ("tests/test_any_app.py",),
    "payloads": ("tests/test_team_payloads.py",),
    "tansu": ("tests/test_tansu.py", "tests/test_cleanup.py"),
    "images": ("tests/test_image_apps.py",),
    "shapes": ("tests/test_service_shapes.py",),
    "compare": ("tests/test_compare_cli.py", "tests/test_plugins.py"),
    "transactions": ("tests/test_open_transactions.py",),
    "database": ("tests/test_database_sink.py", "tests/test_billing_apps.py"),
    "jvm": (
        "tests/test_jvm_apps.py",
        "tests/test_static_members.py",
        "tests/test_partition_expansion.py",
        "tests/test_protocol_migration.py",
        "tests/test_share_groups.py",
    ),
    "brokers": ("tests/test_broker_releases.py", "tests/test_history.py"),
    "teams": (
        "tests/test_team_install.py",
        "tests/test_team_directories.py",
        "tests/test_bad_input.py",
    ),
    "spark": ("tests/test_connect_server.py", "tests/test_checker_end_to_end.py"),
    "requests": ("tests/test_request_proxy.py",),
    "flink": ("tests/test_flink_job.py",),
    "explore": ("tests/test_explore_cli.py",),
}
ROOT = Path(__file__).resolve().parent.parent


def run(args: argparse.Namespace) -> None:
    names = args.incidents or list(GROUPS)  # the words after `matrix`
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        raise SystemExit(f"matrix: unknown group(s) {', '.join(unknown)}; of {', '.join(GROUPS)}")
    if "tansu" in names:
        build_tansu()
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [
            sys.executable, "-m", "pytest", "--matrix", "-m", "matrix", "-p", "no:cacheprovider",
            "-n", str(args.jobs), "--dist", "worksteal", f"--junitxml={junit}",
            *(path for name in names for path in GROUPS[name]),
        ]  # fmt: skip
        print("matrix:", " ".join(command[3:]), flush=True)
        began = time.monotonic()
        status = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - began
        if not junit.exists():
            raise SystemExit(f"matrix: pytest wrote no results (exit {status.returncode}):\n"
                             f"{status.stdout[-3000:]}{status.stderr[-2000:]}")  # fmt: skip
        results = read_junit(junit)
    report(results, names, wall)
    if status.returncode != 0:
        print(status.stdout[-6000:])
        raise SystemExit(f"matrix: a test failed (pytest exit {status.returncode})")


def build_tansu() -> None:
    """Tansu from crates.io, built once and cached (9 to 30 minutes the first time)."""
    from kafka_replay.cluster.tansu import TansuCluster, tansu_binary
    from kafka_replay.cluster.versions import choose_tansu_version

    version = choose_tansu_version(None)
    problem = TansuCluster.unavailable(version)
    if problem:
        raise SystemExit(f"matrix: the tansu group needs Tansu: {problem}")
    began = time.monotonic()
    binary = tansu_binary(version)
    print(f"matrix: Tansu {version} at {binary} ({time.monotonic() - began:.0f} s)", flush=True)


def read_junit(path: Path) -> list[tuple[str, str, float]]:
    """(test id, passed/failed/skipped, seconds) for each test pytest ran."""
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        where = f"{module}.py::{case.get('name')}"
        kinds = {child.tag for child in case}
        result = (
            "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds
            else "passed"
        )  # fmt: skip
        found.append((where, result, float(case.get("time", 0))))
    return found


def report(results: list[tuple[str, str, float]], names: list[str], wall: float) -> None:
    for where, result, seconds in sorted(results):
        print(f"  {result:<8} {seconds:7.1f} s  {where}")
    for name in names:
        mine = [r for r in results if r[0].startswith(GROUPS[name])]
        passed = sum(1 for r in mine if r[1] == "passed")
        print(f"matrix {name}: {passed} of {len(mine)} passed, "
              f"{sum(r[2] for r in mine):.0f} worker-seconds")  # fmt: skip
    print(f"matrix: {len(results)} tests in {wall:.0f} s of wall time")
