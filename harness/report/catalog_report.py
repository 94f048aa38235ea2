"""The catalog report: ``report.json`` for machines, ``report.md`` and a table for people."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from .outcome import Outcome, delivered, meaning, result_label


def comparisons(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Per incident run under both profiles: remediated / vulnerable for each numeric symptom."""
    by_key = {(o.incident, o.profile): o for o in outcomes}
    ratios: dict[str, dict[str, float]] = {}
    for (incident, profile), vulnerable in by_key.items():
        remediated = by_key.get((incident, "remediated"))
        if profile != "vulnerable" or remediated is None:
            continue
        for name, before in vulnerable.symptoms.items():
            after = remediated.symptoms.get(name)
            numeric = all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after)
            )
            if numeric and before:
                ratios.setdefault(incident, {})[name] = round(after / before, 2)
    return ratios


def report_json(outcomes: Sequence[Outcome], context: dict[str, Any]) -> dict[str, Any]:
    return {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **context,
        "passed": all(o.gate != "FAIL" for o in outcomes),
        "runs": [o.to_json() for o in outcomes],
        "remediated_over_vulnerable": comparisons(outcomes),
    }


def _symptoms_text(outcome: Outcome) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in outcome.symptoms.items())


def _value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def why(outcome: Outcome) -> str:
    """A failed item's reasons on one line."""
    parts = list(outcome.reasons)
    if outcome.error:
        parts.append(f"error in {outcome.failed_stage}: {outcome.error.splitlines()[0]}")
    return "; ".join(parts)


SUMMARY_COLUMNS = ("incident", "profile", "result", "delivered", "declared", "gate", "seconds")


def _summary_row(o: Outcome) -> tuple[str, ...]:
    return (
        o.incident,
        o.profile,
        result_label(o),
        delivered(o),
        o.guarantee,
        o.gate,
        f"{o.duration_s:.0f}",
    )


def summary_markdown(outcomes: Sequence[Outcome]) -> str:
    """The summary table in Markdown (``report.md``, GitHub's job summary)."""
    lines = ["| " + " | ".join(SUMMARY_COLUMNS) + " |", "|" + "---|" * len(SUMMARY_COLUMNS)]
    lines += ["| " + " | ".join(_summary_row(o)) + " |" for o in outcomes]
    for o in outcomes:
        if not o.passed:
            lines.append(f"\n**{o.incident} [{o.profile}]** ({o.gate}): {why(o)}")
    labels = dict.fromkeys(result_label(o) for o in outcomes)
    lines += ["", *(f"- **{label}**: {meaning(label)}" for label in labels if meaning(label))]
    return "\n".join(lines) + "\n"


def markdown(outcomes: Sequence[Outcome]) -> str:
    lines = [summary_markdown(outcomes), "## Per run", ""]
    columns = ["incident", "profile", "app", "guarantee", "verdict", "reproduced", "result"]
    columns += ["gate", "seconds", "symptoms"]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for o in outcomes:
        lines.append(
            f"| {o.incident} | {o.profile} | {o.app} | {o.guarantee} | {o.verdict} | "
            f"{_value(o.reproduced)} | {result_label(o)} | {o.gate} | "
            f"{o.duration_s:.0f} | "
            f"{_symptoms_text(o)} |"
        )
    for o in outcomes:
        if not o.passed:
            said = "does not apply" if o.gate == "n/a" else "failed"
            lines += ["", f"### {o.incident} [{o.profile}] {said}", "", "```", o.explain(), "```"]
    return "\n".join(lines) + "\n"


def write_report(directory: Path, outcomes: Sequence[Outcome], context: dict[str, Any]) -> Path:
    """Write ``report.json``, ``report.md`` and ``report.html``; return the JSON's path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "report.json"
    path.write_text(json.dumps(report_json(outcomes, context), indent=2, default=str))
    (directory / "report.md").write_text(markdown(outcomes))
    from .html_report import write_html  # plotly loads only when a report is written

    write_html(directory)
    return path


def summary_rich_table(outcomes: Sequence[Outcome], title: str) -> Table:
    """The summary as a rich table, for the terminal."""
    table = Table(title=title)
    for column in SUMMARY_COLUMNS:
        table.add_column(column)
    for o in outcomes:
        row = list(_summary_row(o))
        row[5] = {"pass": "[green]pass", "n/a": "[yellow]n/a"}.get(o.gate, "[red]FAIL")
        table.add_row(*row)
    return table


def summary_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """Under the table: why each failed item failed (one line), what each result means."""
    lines = [
        f"{'N/A' if o.gate == 'n/a' else 'FAIL'} {o.incident} [{o.profile}]: {why(o)}"
        for o in outcomes
        if not o.passed
    ]
    labels = dict.fromkeys(result_label(o) for o in outcomes)
    lines += [f"{label}: {meaning(label)}" for label in labels if meaning(label)]
    return lines


def symptom_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """One line of measured symptoms per run."""
    return [f"{o.incident} [{o.profile}]: {_symptoms_text(o)}" for o in outcomes]


def write_step_summary(outcomes: Sequence[Outcome]) -> Path | None:
    """Append the summary to GitHub's job summary when the run is a GitHub Actions step."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as summary:
        summary.write("## Incident replay\n\n" + summary_markdown(outcomes) + "\n")
    return Path(target)


def write_comparison_step_summary(markdown: str) -> Path | None:
    """Append a comparison's table (``compare``'s ``report.md``) to GitHub's job summary when
    the comparison is a GitHub Actions step."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as summary:
        summary.write(markdown + "\n")
    return Path(target)
