"""Headless Chromium: a report page rendered to a PNG, and what its console said.

Started with the flags that keep it off the network (no background services, updates or
sync) and with a fresh profile directory that is removed afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


class BrowserMissing(RuntimeError):
    """No Chromium to render with."""


@dataclass(frozen=True)
class Rendering:
    png: Path
    console: list[str]  # the page's console messages, as Chromium logged them


def chromium() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing("rendering needs Chromium: install it (Debian: apt-get install chromium)")


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 2000) -> Rendering:
    """Render ``page`` headless into ``png`` (scripts run until the page is idle)."""
    png.parent.mkdir(parents=True, exist_ok=True)
    result = _run(page, f"--screenshot={png.resolve()}", f"--window-size={width},{height}")
    if not png.exists():
        raise RuntimeError(f"Chromium did not render {page}: {result.stderr[-2000:]}")
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    return Rendering(png, console)


def dom(page: Path) -> str:
    """The page's DOM after its scripts ran (what Plotly drew is in it as SVG)."""
    return _run(page, "--dump-dom").stdout


def _run(page: Path, *asks: str) -> subprocess.CompletedProcess[str]:
    """Chromium on ``page`` with a fresh profile, its scripts given ten seconds of virtual time."""
    with tempfile.TemporaryDirectory(prefix="kafka-replay-chromium-") as profile:
        return subprocess.run(
            [
                chromium(),
                *FLAGS,
                f"--user-data-dir={profile}",
                *asks,
                "--virtual-time-budget=10000",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
