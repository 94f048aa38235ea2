"""``report.html`` from a real run, rendered in headless Chromium; its pure parts on their own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from harness.replay.browser import dom, screenshot
from harness.replay.html_report import per_second, regressions

needs_chromium = pytest.mark.skipif(
    not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")),
    reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)",
)


def kafka_replay(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli", *args]


@needs_chromium
def test_a_real_runs_report_draws_its_timeline(tmp_path: Path) -> None:
    report = tmp_path / "report"
    ran = subprocess.run(
        kafka_replay("run", "zombie-commit", "--profile", "vulnerable", "--report", str(report)),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    page = report / "report.html"
    assert "<script src=" not in page.read_text()  # plotly.js is inside: it opens offline

    drawn = dom(page)
    assert drawn.count('class="main-svg"') >= 2  # Plotly turned the figure into SVG
    for legend in ("lag p0", "committed p1", "committed offset went back", "outputs per second",
                   "app start", "group rebalance"):  # fmt: skip
        assert legend in drawn, legend

    png = tmp_path / "report.png"
    again = subprocess.run(
        kafka_replay("report", str(report), "--png", str(png)),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    rendering = screenshot(page, png)
    assert rendering.console == []  # no script error, no warning
    image = Image.open(png).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24) or []
    white = next((count for count, rgb in colours if rgb == (255, 255, 255)), 0)
    assert len(colours) > 100  # lines, markers, bands and text, not a blank page
    assert white < 0.9 * image.width * image.height


@needs_chromium
def test_the_console_check_sees_an_error_in_the_page(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text('<html><body><script>console.error("drawn wrong")</script></body></html>')
    rendering = screenshot(page, tmp_path / "broken.png")
    assert any("drawn wrong" in line for line in rendering.console)


def test_a_commit_below_the_previous_one_is_a_regression() -> None:
    commits = [
        {"partition": 0, "offset": 5}, {"partition": 1, "offset": 9},
        {"partition": 0, "offset": 3}, {"partition": 0, "offset": None},  # a tombstone
        {"partition": 0, "offset": 1}, {"partition": 1, "offset": 9},
    ]  # fmt: skip
    assert regressions(commits) == [{"partition": 0, "offset": 3}]


def test_outputs_are_counted_per_second_with_the_quiet_seconds() -> None:
    assert per_second([0.1, 0.5, 2.2]) == ([0.0, 1.0, 2.0], [2, 0, 1])
    assert per_second([]) == ([], [])
