"""The harness installed into a new virtualenv by pip and by uv, side by side, from nothing.

``./dev`` installs the harness and its dependencies (PySpark's wheel is most of it) into
``.venv`` on every new machine. This times that step as a new machine pays it: a new
virtualenv, an empty download cache, everything from PyPI; with pip (upgraded first, as
``./dev`` does) and with uv (installed from PyPI into the new virtualenv first, its own time
counted). The two take turns, ``--runs`` times each; the medians and their ratio are
reported with the load average beside each run.

    ./dev bench installers --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
#: The installer's commands, after the new virtualenv exists; ``{python}`` is its interpreter.
INSTALLERS = {
    "pip": [
        ["{python}", "-m", "pip", "install", "-q", "--upgrade", "pip"],
        ["{python}", "-m", "pip", "install", "-q", "-e", ".[dev]"],
    ],
    "uv": [
        ["{python}", "-m", "pip", "install", "-q", "uv"],
        ["{python}", "-m", "uv", "pip", "install", "-q", "--python", "{python}", "-e", ".[dev]"],
    ],
}


def install(installer: str, where: Path) -> float:
    """Seconds to create a virtualenv in ``where`` and install the harness with ``installer``,
    every download cache empty (pointed into ``where``)."""
    cache = where / "cache"
    env = {
        **os.environ,
        "PIP_CACHE_DIR": str(cache / "pip"),
        "UV_CACHE_DIR": str(cache / "uv"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    python = str(where / "venv" / "bin" / "python")
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True, env=env)
    for command in INSTALLERS[installer]:
        done = subprocess.run(
            [part.replace("{python}", python) for part in command],
            cwd=PROJECT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            sys.exit(f"{installer} failed ({' '.join(command)}):\n{done.stdout}{done.stderr}")
    return time.monotonic() - started


def run(args: argparse.Namespace) -> None:
    print(f"\nThe harness installed into a new virtualenv, caches empty, {args.runs} runs each")
    seconds: dict[str, list[float]] = {name: [] for name in INSTALLERS}
    for attempt in range(args.runs):
        order = list(INSTALLERS) if attempt % 2 == 0 else list(reversed(INSTALLERS))
        for installer in order:
            with tempfile.TemporaryDirectory(prefix=f"bench-install-{installer}-") as where:
                took = install(installer, Path(where))
            seconds[installer].append(took)
            print(f"  {attempt + 1} {installer:4} {took:6.1f} s, load {os.getloadavg()[0]:.1f}")
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    for name, median in medians.items():
        print(f"{name}: median {median:.1f} s")
    print(f"uv / pip: {medians['uv'] / medians['pip']:.2f}")
