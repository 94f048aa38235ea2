"""``report.html``: one self-contained page that shows what happened in every run.

The page holds a summary table (one row per run, linking to its section) and, per run, its
result, reasons, error and symptoms, its timeline (:func:`.timeline.figure`) and the checker's
examples listed under it. plotly.js is embedded once, for every figure, so the page opens
offline. A run is read by :class:`~kafka_replay.history.recorded.RecordedRun`, from where
``report.json`` says or under ``runs/`` when the directory was moved (:func:`locate`); a history
that cannot be read costs its own timeline, not the page.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from kafka_replay.history.recorded import RecordedRun

from .outcome import Outcome, delivered, result_label
from .readings import example_lines, held_at_check
from .timeline import figure

REPORT_FILE = "report.html"


def locate(report_dir: Path, run: dict[str, Any]) -> Path | None:
    """A run's directory: where report.json says, or under ``runs/`` when DIR was moved."""
    recorded = Path(run.get("run_dir") or "")
    for candidate in (recorded, report_dir / "runs" / recorded.name):
        if recorded.name and candidate.is_dir():
            return candidate
    return None


def _setup(report: dict[str, Any], run: dict[str, Any]) -> str:
    """Kafka version (unless the backend runs another broker), backend and group protocol."""
    backend = report.get("backend") or ""
    runs_kafka = report.get("runs_kafka", True)
    product = [f"Kafka {report.get('kafka_version', '?')}"] if runs_kafka else []
    parts = [*product, backend, run.get("group_protocol", "classic")]
    return " · ".join(p for p in parts if p)


def summary_html_table(report: dict[str, Any]) -> str:
    """The summary: one row per run, each linking to the run's section."""
    head = (
        "incident",
        "profile",
        "Kafka · backend · protocol",
        "app",
        "verdict (declared)",
        "result",
        "reproduced",
        "gate",
        "duration",
    )
    rows = []
    for i, run in enumerate(report.get("runs", [])):
        outcome = Outcome.from_json(run)
        gate = outcome.gate
        reproduced = {True: "yes", False: "no"}.get(outcome.reproduced, "-")
        cells = [
            f'<a href="#run-{i}">{html.escape(outcome.incident)}</a>',
            html.escape(outcome.profile),
            html.escape(_setup(report, run)),
            f"<code>{html.escape(outcome.app)}</code>",
            html.escape(f"{delivered(outcome)} ({outcome.guarantee})"),
            html.escape(result_label(outcome)),
            reproduced,
            f'<b class="{_css_class(gate)}">{gate}</b>',
            f"{outcome.duration_s:.0f} s",
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{h}</th>" for h in head)
    return f"<table><tr>{header}</tr>\n" + "\n".join(rows) + "</table>"


def _css_class(gate: str) -> str:
    return gate.replace("/", "")  # n/a -> na


def _facts(run: dict[str, Any]) -> str:
    """A run's result, reasons, error and symptoms, above its timeline."""
    outcome = Outcome.from_json(run)
    items = [
        f"<li>result: <b>{html.escape(result_label(outcome))}</b>; delivered "
        f"{html.escape(delivered(outcome))}, declared {html.escape(outcome.guarantee)}; "
        f"{outcome.gate}</li>"
    ]
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in outcome.reasons)
    items.append(f"<li>reasons: <ul>{reasons}</ul></li>" if reasons else "<li>reasons: none</li>")
    if outcome.error:
        items.append(
            f'<li class="FAIL">error in {html.escape(str(outcome.failed_stage))}:'
            f"<pre>{html.escape(outcome.error)}</pre></li>"
        )
    symptoms = ", ".join(f"{k}={v}" for k, v in outcome.symptoms.items()) or "none measured"
    items.append(f"<li>symptoms: {html.escape(symptoms)}</li>")
    if outcome.symptoms_outside and outcome.symptoms_outside != outcome.symptoms:
        outside = ", ".join(f"{k}={v}" for k, v in outcome.symptoms_outside.items())
        items.append(f"<li>symptoms without the app's reports: {html.escape(outside)}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _examples_html(lines: list[tuple[str, float | None, str]]) -> str:
    if not lines:
        return "<p>The checker gave no examples.</p>"
    items = "".join(
        f"<li><b>{'time not recorded' if at is None else f'at {at:.1f} s'}</b> "
        f"<code>{html.escape(text[:400])}</code></li>"
        for _, at, text in sorted(lines, key=lambda line: (line[1] is None, line[1] or 0))
    )
    return f"<h3>The checker's examples (starred in the timeline)</h3><ul>{items}</ul>"


def run_section(report_dir: Path, index: int, run: dict[str, Any]) -> str:
    """One run: what it found, then its timeline and the checker's examples."""
    outcome = Outcome.from_json(run)
    title = f"{outcome.incident} [{outcome.profile}]: {result_label(outcome)}"
    parts = [
        f'<section id="run-{index}"><h2>{html.escape(title)} <a class="top" '
        f'href="#top">top</a></h2>',
        _facts(run),
    ]
    run_dir = locate(report_dir, run)
    if run_dir is None:
        parts.append(
            f"<p>History not found at <code>{html.escape(str(run.get('run_dir')))}"
            "</code> (nor under runs/ here): no timeline.</p>"
        )
        return "".join(parts) + "</section>"
    parts.append(f"<p>history: <code>{html.escape(str(run_dir))}</code></p>")
    try:
        recorded = RecordedRun.read(run_dir)
        held = held_at_check(recorded)
        if held:
            parts.append(f'<p class="na">{html.escape(held)}</p>')
        drawn = figure(recorded, run).to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"timeline-{index}",
            config={"displaylogo": False, "responsive": True},
        )
        parts += [drawn, _examples_html(example_lines(recorded))]
    except Exception as exc:  # one unreadable history must not cost the whole page
        why_not = f"{type(exc).__name__}: {exc}"
        parts.append(f'<p class="FAIL">The timeline could not be drawn: {html.escape(why_not)}</p>')
    return "".join(parts) + "</section>"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top;
         white-space: nowrap; }
th { background: #f3f3f3; } .pass { color: #0a7d32; } .FAIL { color: #c62828; }
.na { color: #8a6d00; }
section { margin-top: 28px; border-top: 2px solid #ddd; }
section ul { font-size: 13px; margin: 4px 0; } code, pre { font-size: 12px; }
a.top { font-size: 12px; font-weight: normal; margin-left: 8px; }
"""


def render(report_dir: Path) -> str:
    """The page for a report directory (``report.json`` and the runs it names)."""
    from plotly.offline import get_plotlyjs

    report = json.loads((report_dir / "report.json").read_text())
    runs = report.get("runs", [])
    failed = [r for r in runs if not r.get("passed")]
    verdict = f"{len(failed)} of {len(runs)} runs failed." if failed else "Every run passed."
    sections = "\n".join(run_section(report_dir, i, run) for i, run in enumerate(runs))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Incident replay report</title><style>{STYLE}</style>"
        f"<script>{get_plotlyjs()}</script></head>\n"  # plotly.js once, for every figure
        f'<body><h1 id="top">Incident replay</h1><p>Generated '
        f"{html.escape(str(report.get('generated', '')))}. {verdict} Hover a marker for what "
        f"it is; drag to zoom, double-click to zoom out.</p>\n{summary_html_table(report)}\n"
        f"{sections}\n</body></html>\n"
    )


def write_html(report_dir: Path) -> Path:
    """Write ``report.html`` beside ``report.json``; return its path."""
    path = report_dir / REPORT_FILE
    path.write_text(render(report_dir), encoding="utf-8")
    return path
