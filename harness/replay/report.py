"""The catalog report: ``report.json`` for machines, ``report.md`` and a table for people."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from .runner import Outcome


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
        "passed": all(o.passed for o in outcomes),
        "runs": [o.to_json() for o in outcomes],
        "remediated_over_vulnerable": comparisons(outcomes),
    }


def _symptoms_text(outcome: Outcome) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in outcome.symptoms.items())


def _value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def markdown(outcomes: Sequence[Outcome]) -> str:
    columns = ["incident", "profile", "app", "guarantee", "verdict", "reproduced", "result"]
    columns += ["gate", "seconds", "symptoms"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for o in outcomes:
        lines.append(
            f"| {o.incident} | {o.profile} | {o.app} | {o.guarantee} | {o.verdict} | "
            f"{_value(o.reproduced)} | {o.result} | {'pass' if o.passed else 'FAIL'} | "
            f"{o.duration_s:.0f} | "
            f"{_symptoms_text(o)} |"
        )
    for o in outcomes:
        if not o.passed:
            lines += ["", f"### {o.incident} [{o.profile}] failed", "", "```", o.explain(), "```"]
    return "\n".join(lines) + "\n"


def write_report(directory: Path, outcomes: Sequence[Outcome], context: dict[str, Any]) -> Path:
    """Write ``report.json`` and ``report.md`` into ``directory``; return the JSON's path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "report.json"
    path.write_text(json.dumps(report_json(outcomes, context), indent=2, default=str))
    (directory / "report.md").write_text(markdown(outcomes))
    return path


def summary_table(outcomes: Sequence[Outcome], title: str) -> Table:
    table = Table(title=title)
    columns = ("incident", "profile", "delivered (declared: held?)", "result", "gate", "seconds")
    for column in columns:
        table.add_column(column)
    for o in outcomes:
        table.add_row(
            o.incident,
            o.profile,
            f"{o.verdict} ({o.guarantee}: {o.check})",
            o.result,
            "[green]pass" if o.passed else "[red]FAIL",
            f"{o.duration_s:.0f}",
        )
    return table


def symptom_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """One line of measured symptoms per run, and why each failed run failed."""
    lines = []
    for o in outcomes:
        lines.append(f"{o.incident} [{o.profile}]: {_symptoms_text(o)}")
        if not o.passed:
            lines += [f"    {reason}" for reason in o.reasons]
            if o.error:
                lines.append(f"    error in {o.failed_stage}: {o.error}")
    return lines
