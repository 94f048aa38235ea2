"""Leak trials: a replay SIGKILLed at a random moment, and what it leaves behind.

``kill -9`` gives a process no chance to clean up; what it started must die with it or be
reaped by the next run. Each trial starts a replay (``kafka-replay run``, the same with
``--jobs 2``, or a pytest session of incident items) with its own ``TMPDIR`` and lease
registry, watches its process tree, SIGKILLs the top process after a random delay (seeded),
then counts what is left: its processes by kind (broker and Spark JVMs, apps, worker
processes), listening ports they had opened, temporary directories, leases, and containers.
It counts again after what the next run does first (``reap_orphans``). pytest's own
``pytest-of-<user>`` base directory, which pytest itself rotates, is reported apart.

    ./dev bench leaks --times 5
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

TRIALS = {
    "kafka-replay run": ["-m", "kafka_replay.cli", "run", "zombie-commit"],
    "kafka-replay run --jobs 2": [
        "-m", "kafka_replay.cli", "run", "zombie-commit", "deal-flood", "--jobs", "2",
    ],
    "pytest": ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "zombie-commit", "incidents"],
}  # fmt: skip
KINDS = {
    "broker": ("kafka.Kafka", "kafka-server-start", "org.apache.kafka"),
    "spark": ("org.apache.spark",),
    "app": ("kafka_replay_incidents.apps", "tests.apps"),
    "worker": ("kafka_replay.cli",),
}
DELAY_S = (2.0, 75.0)  # up to the checker stage of the runs
SETTLE_S = 5.0


def kind_of(command: str) -> str:
    return next((kind for kind, marks in KINDS.items() if any(m in command for m in marks)), "")


def _snapshot(pid: int, seen: dict[int, tuple[psutil.Process, str]], ports: set[int]) -> None:
    try:
        tree = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return
    for process in tree:
        try:
            if process.pid not in seen:
                seen[process.pid] = (process, kind_of(" ".join(process.cmdline())) or "other")
            ports.update(c.laddr.port for c in process.net_connections() if c.status == "LISTEN")
        except psutil.Error:
            continue


def _left(seen: dict[int, tuple[psutil.Process, str]], ports: set[int], tmp: Path,
          registry: Path) -> Counter[str]:  # fmt: skip
    left: Counter[str] = Counter({f"{kind} processes": 0 for kind in [*KINDS, "other"]})
    for process, kind in seen.values():
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                left[f"{kind} processes"] += 1
        except psutil.Error:
            continue
    listening = {c.laddr.port for c in psutil.net_connections() if c.status == "LISTEN"}
    left["ports"] = len(ports & listening)
    entries = list(tmp.iterdir())
    left["temp dirs"] = sum(1 for e in entries if not e.name.startswith("pytest-of-"))
    left["pytest basetemp (rotated by pytest)"] = len(entries) - left["temp dirs"]
    left["leases"] = len(list(registry.glob("*.json")))
    if shutil.which("docker"):
        ps = subprocess.run(
            ["docker", "ps", "-aq", "--filter", "label=kafka-replay.lease"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        left["containers"] = len(ps.stdout.split()) if ps.returncode == 0 else 0
    return left


def trial(
    args: list[str], delay_s: float, root: Path
) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """One replay killed after ``delay_s``: what ran, what was left, what the next start left."""
    tmp, registry = root / "tmp", root / "registry"
    tmp.mkdir(parents=True)
    registry.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "KAFKA_REPLAY_REGISTRY": str(registry)}
    child = subprocess.Popen(
        [sys.executable, *args], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    seen: dict[int, tuple[psutil.Process, str]] = {}
    ports: set[int] = set()
    deadline = time.monotonic() + delay_s
    while time.monotonic() < deadline and child.poll() is None:
        _snapshot(child.pid, seen, ports)
        time.sleep(0.2)
    child.send_signal(signal.SIGKILL)
    child.wait()
    time.sleep(SETTLE_S)  # what dies with its parent has died by now
    at_kill = _left(seen, ports, tmp, registry)
    subprocess.run(
        [sys.executable, "-c",
         "from kafka_replay.servers.reaper import reap_orphans; reap_orphans()"],
        env=env, check=True,
    )  # fmt: skip
    time.sleep(SETTLE_S)
    running = Counter(kind for _, kind in seen.values())
    return running, at_kill, _left(seen, ports, tmp, registry)


def run(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    for name, command in TRIALS.items():
        seen: Counter[str] = Counter()
        at_kill: Counter[str] = Counter()
        after: Counter[str] = Counter()
        delays = []
        for _ in range(args.times):
            delay = round(rng.uniform(*DELAY_S), 1)
            delays.append(delay)
            with tempfile.TemporaryDirectory(prefix="kafka-replay-leaks-") as root:
                running, left, reaped = trial(command, delay, Path(root))
            seen.update(running)
            at_kill.update(left)
            after.update(reaped)
        print(f"\n{name}: {args.times} trials, killed after {delays} s")
        print(
            "  processes seen before the kills: " + ", ".join(f"{n} {k}" for k, n in seen.items())
        )
        for what in sorted(set(at_kill) | set(after)):
            print(f"  {what}: {at_kill[what]} left at the kill, {after[what]} after the next start")
