"""The exploration's report: each finding with its shrunk schedule's timeline, what was tried,
and the time spent (``explore.md`` and ``explore.html`` beside the written definitions)."""

from __future__ import annotations

import html
import time
from pathlib import Path

from .explorer import Exploration


def report_lines(result: Exploration, budget_s: float) -> list[str]:
    spent = time.monotonic() - result.started
    plays = len(result.tried)
    lines = [
        f"# Exploration, seed {result.seed}",
        "",
        f"{result.schedules} schedule(s) drawn, {plays} play(s), {spent:.0f} s of a "
        f"{budget_s:.0f} s budget; {len(result.findings)} finding(s).",
        "",
    ]
    for finding in result.findings:
        lines += [
            f"## {finding.kind}: `{finding.path.name}`",
            "",
            f"Drawn as schedule {finding.drawn.index} with {len(finding.drawn.faults)} fault(s), "
            f"shrunk to {len(finding.shrunk.faults)}:",
            "",
            *(f"1. {step}" for step in finding.shrunk.timeline()),
            "",
            f"Replay it: `kafka-replay run --incidents {finding.path.parent} {finding.path.stem}`",
            "",
        ]
    if result.unconfirmed:
        lines += ["## Not confirmed (did not come back 2 of 3 times)", "",
                  *(f"- {name}" for name in result.unconfirmed), ""]  # fmt: skip
    if result.apart:
        lines += ["## Reported apart (the reference service broke too)", "",
                  *(f"- {name}" for name in result.apart), ""]  # fmt: skip
    lines += ["## Plays", "", "| schedule | faults | service | found | seconds |",
              "|---|---|---|---|---|"]  # fmt: skip
    for tried in result.tried:
        found = ", ".join(tried.kinds) or (f"did not play: {tried.error}" if tried.error else "-")
        lines.append(
            f"| {tried.schedule} | {tried.faults} | {tried.service} | {found} | {tried.seconds} |"
        )
    return lines


def write_report(result: Exploration, budget_s: float, out_dir: Path) -> Path:
    """``explore.md`` and ``explore.html`` in ``out_dir``; the markdown's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = report_lines(result, budget_s)
    markdown = out_dir / "explore.md"
    markdown.write_text("\n".join(lines) + "\n")
    page = "<!doctype html><meta charset=utf-8><title>Exploration</title><pre>{}</pre>"
    (out_dir / "explore.html").write_text(page.format(html.escape("\n".join(lines))))
    return markdown
