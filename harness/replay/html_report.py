"""``report.html``: one self-contained page that shows what happened in every run.

Plots are drawn by Plotly: a well-kept library whose Python package carries plotly.js, so the
page embeds it once and opens offline, and every marker can say what it is on hover. Each run
gets one figure with a shared time axis (seconds since the run started): lag and committed
offset per partition, outputs per second, what the app and the group did, the incident's
steps as bands, and the checker's examples at the moment they happened.
"""

from __future__ import annotations

import html
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.history import read_stream

from .report import delivered, result_label, why

REPORT_FILE = "report.html"
STEP_COLOURS = ("rgba(99,110,250,0.10)", "rgba(0,204,150,0.10)", "rgba(255,161,90,0.12)")


def _stream(run_dir: Path, name: str) -> list[dict[str, Any]]:
    path = run_dir / "events" / f"{name}.jsonl"
    return list(read_stream(path)) if path.exists() else []


def _json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def _deliveries(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "deliveries.jsonl"
    return list(read_stream(path)) if path.exists() else []


def regressions(commits: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Commits whose offset is below the partition's previous commit (offsets going back)."""
    last: dict[int, int] = {}
    found = []
    for commit in commits:
        partition, offset = commit["partition"], commit.get("offset")
        if offset is None:
            last.pop(partition, None)  # a tombstone: the next commit starts afresh
            continue
        if partition in last and offset < last[partition]:
            found.append(commit)
        last[partition] = offset
    return found


def per_second(times: Iterable[float]) -> tuple[list[float], list[int]]:
    """Counts per whole second, with the empty seconds between them."""
    counts = Counter(int(t) for t in times)
    if not counts:
        return [], []
    seconds = list(range(min(counts), max(counts) + 1))
    return [float(s) for s in seconds], [counts.get(s, 0) for s in seconds]


class _Timeline:
    """Collects one run's traces on a shared clock (seconds since ``start``)."""

    ROWS = ("lag", "committed offset", "outputs / s", "app and group")

    def __init__(self, run_dir: Path, outcome: dict[str, Any]) -> None:
        from plotly.subplots import make_subplots

        self.run_dir, self.outcome = run_dir, outcome
        self.meta = _json(run_dir / "run.json")
        self.start = float(self.meta.get("started") or 0.0)
        self.hot = outcome.get("symptoms", {}).get("hot_partition")
        rows = list(self.ROWS) + (["hot partition deliveries"] if self.hot is not None else [])
        self.rows = rows
        self.figure = make_subplots(
            rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.04,
            subplot_titles=rows, row_heights=[1.0] * (len(rows) - 1) + [1.0],
        )  # fmt: skip

    def t(self, ts: float) -> float:
        return round(ts - self.start, 3)

    def row(self, name: str) -> int:
        return self.rows.index(name) + 1

    def draw(self) -> Any:
        self._lag()
        self._offsets()
        self._outputs()
        self._events()
        if self.hot is not None:
            self._hot()
        self._steps()
        self.figure.update_layout(
            height=200 * len(self.rows) + 80, margin={"l": 60, "r": 20, "t": 40, "b": 40},
            hovermode="closest", legend={"orientation": "h", "y": -0.05},
        )  # fmt: skip
        self.figure.update_xaxes(title_text="seconds since the run started", row=len(self.rows))
        return self.figure

    def _lag(self) -> None:
        import plotly.graph_objects as go

        lines: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for sample in _stream(self.run_dir, "lag"):
            lines[sample["partition"]].append((self.t(sample["ts"]), sample["lag"]))
        for partition, points in sorted(lines.items()):
            xs, ys = zip(*points, strict=True)
            self.figure.add_trace(
                go.Scatter(x=xs, y=ys, mode="lines", name=f"lag p{partition}",
                           legendgroup=f"p{partition}"),
                row=self.row("lag"), col=1,
            )  # fmt: skip

    def _offsets(self) -> None:
        import plotly.graph_objects as go

        entries = _stream(self.run_dir, "offsets")
        row = self.row("committed offset")
        by_partition: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for entry in entries:
            if entry.get("kind") == "commit":
                by_partition[entry["partition"]].append(entry)
        for partition, commits in sorted(by_partition.items()):
            self.figure.add_trace(
                go.Scatter(x=[self.t(c["ts"]) for c in commits], y=[c["offset"] for c in commits],
                           mode="lines+markers", marker={"size": 4}, line={"shape": "hv"},
                           name=f"committed p{partition}", legendgroup=f"p{partition}"),
                row=row, col=1,
            )  # fmt: skip
        back = regressions(e for e in entries if e.get("kind") in ("commit", "tombstone"))
        self._markers(
            row, back, "offset", "committed offset went back", "x", "crimson",
            lambda c: f"p{c['partition']}: commit of offset {c['offset']} (went back)",
        )  # fmt: skip
        tombstones = [e for e in entries if e.get("kind") == "tombstone"]
        self._markers(
            row, tombstones, None, "offsets expired (tombstone)", "diamond", "black",
            lambda e: f"p{e['partition']}: the group's offset was deleted (tombstone)",
        )  # fmt: skip

    def _outputs(self) -> None:
        import plotly.graph_objects as go

        row = self.row("outputs / s")
        deliveries = _deliveries(self.run_dir)
        if not deliveries:
            self._note(row, "outputs not recorded (the checker did not run)")
            return
        xs, ys = per_second(self.t(d["out_ts_ms"] / 1000) for d in deliveries)
        self.figure.add_trace(
            go.Bar(x=xs, y=ys, name="outputs per second", marker_color="#636efa"),
            row=row, col=1,
        )  # fmt: skip
        seen: set[str] = set()
        repeats = []
        for delivery in deliveries:
            if delivery["event_id"] in seen:
                repeats.append({**delivery, "ts": delivery["out_ts_ms"] / 1000})
            seen.add(delivery["event_id"])
        self._markers(
            row, repeats, 0, "delivered again (duplicate)", "triangle-up", "crimson",
            lambda d: f"{d['event_id']} again (input p{d['in_partition']}@{d['in_offset']})",
        )  # fmt: skip
        check = _json(self.run_dir / "check.json")
        produce = _stream(self.run_dir, "produce")
        acks = {a["event_id"]: a for a in produce if a.get("kind") == "ack"}
        lost = [
            {**acks[e["event_id"]], **e}
            for e in check.get("anomalies", {}).get("lost", {}).get("examples", [])
            if e.get("event_id") in acks
        ]
        self._markers(
            row, lost, 0, "lost (acknowledged, never delivered)", "x-thin-open", "black",
            lambda e: f"{e['event_id']} lost (acknowledged here)",
        )  # fmt: skip

    def _events(self) -> None:
        row = self.row("app and group")
        lifecycle = _stream(self.run_dir, "lifecycle")
        group = _stream(self.run_dir, "group")
        styles = {
            "start": ("app start", "circle", "#00cc96"),
            "exit": ("app exit", "square", "#ef553b"),
            "signal": ("signal sent", "x", "#ab63fa"),
            "crash_loop": ("crash loop", "star", "crimson"),
            "killed_after_grace": ("killed after grace", "x", "black"),
        }
        for kind, (name, symbol, colour) in styles.items():
            events = [e for e in lifecycle if e.get("kind") == kind]
            self._markers(row, events, "app", name, symbol, colour, _describe)
        for kind, colour in (
            ("join", "#19d3f3"), ("leave", "#ffa15a"), ("removed", "crimson"),
            ("rebalance", "#636efa"), ("stabilized", "#00cc96"),
        ):  # fmt: skip
            events = [e for e in group if e.get("kind") == kind]
            self._markers(row, events, "group", f"group {kind}", "line-ns-open", colour, _describe)
        if not lifecycle and not group:
            self._note(row, "no app or group events recorded")

    def _hot(self) -> None:
        import plotly.graph_objects as go

        hot = [d for d in _deliveries(self.run_dir) if d["in_partition"] == self.hot]
        self.figure.add_trace(
            go.Scatter(x=[self.t(d["out_ts_ms"] / 1000) for d in hot],
                       y=[d["in_offset"] for d in hot], mode="markers",
                       name=f"hot partition {self.hot}: input offset delivered",
                       marker={"size": 5, "color": "#ef553b"}),
            row=self.row("hot partition deliveries"), col=1,
        )  # fmt: skip

    def _steps(self) -> None:
        for i, step in enumerate(_stream(self.run_dir, "steps")):
            begin, end = self.t(step["started"]), self.t(step["ended"])
            label = step.get("label") or step.get("do", "step")
            named = {"annotation_text": label, "annotation_position": "top left",
                     "annotation_font_size": 9} if end - begin > 2 else {}  # fmt: skip
            self.figure.add_vrect(
                x0=begin, x1=max(end, begin + 0.05), fillcolor=STEP_COLOURS[i % 3],
                line_width=0, layer="below", **named,
            )  # fmt: skip

    def _markers(
        self, row: int, events: Sequence[dict[str, Any]], y: Any, name: str, symbol: str,
        colour: str, text: Any,
    ) -> None:  # fmt: skip
        import plotly.graph_objects as go

        if not events:
            return
        ys = [e.get(y, 0) if isinstance(y, str) and y in e else y for e in events]
        if y is None:
            ys = [0 for _ in events]
        self.figure.add_trace(
            go.Scatter(x=[self.t(e["ts"]) for e in events], y=ys, mode="markers", name=name,
                       marker={"symbol": symbol, "size": 10, "color": colour},
                       hovertext=[text(e) for e in events], hoverinfo="text+x"),
            row=row, col=1,
        )  # fmt: skip

    def _note(self, row: int, text: str) -> None:
        axis = "" if row == 1 else str(row)
        self.figure.add_annotation(
            text=text, showarrow=False, xref=f"x{axis} domain", yref=f"y{axis} domain",
            x=0.5, y=0.5,
        )  # fmt: skip


def _describe(event: dict[str, Any]) -> str:
    fields = {k: v for k, v in event.items() if k not in ("ts", "command") and v is not None}
    return html.escape(", ".join(f"{k}={v}" for k, v in fields.items()))[:300]


def _examples(run_dir: Path, start: float) -> list[str]:
    """The checker's examples, each with the moment it happened."""
    check = _json(run_dir / "check.json")
    lines = []
    for name, anomaly in check.get("anomalies", {}).items():
        for example in anomaly.get("examples", [])[:3]:
            moment = example.get("ts") or (example.get("commit_ts_ms") or 0) / 1000
            at = f"at {moment - start:.1f} s: " if moment else ""
            shown = {k: v for k, v in example.items() if k != "context"}
            lines.append(f"{name} ({anomaly.get('count', 0)} in all) {at}{shown}")
    return lines


def _summary_rows(report: dict[str, Any]) -> str:
    setup = f"Kafka {report.get('kafka_version', '?')}"
    rows = []
    for i, run in enumerate(report.get("runs", [])):
        outcome = _outcome(run)
        gate = "pass" if run["passed"] else "FAIL"
        cells = [
            f'<a href="#run-{i}">{html.escape(run["incident"])}</a>', run["profile"],
            f"{setup}, {run.get('group_protocol', 'classic')} protocol", run["app"],
            f"{delivered(outcome)} (declared {run['guarantee']})", result_label(outcome),
            str(run.get("reproduced")).lower(), f'<b class="{gate}">{gate}</b>',
            f"{run['duration_s']:.0f} s",
        ]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "\n".join(rows)


def _outcome(run: dict[str, Any]) -> Any:
    from .runner import Outcome

    return Outcome(**run)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Incident replay report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; font-size: 14px; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
th {{ background: #f3f3f3; }} .pass {{ color: #0a7d32; }} .FAIL {{ color: #c62828; }}
section {{ margin-top: 32px; border-top: 2px solid #ddd; }} code, pre {{ font-size: 12px; }}
</style>{plotly}</head><body>
<h1>Incident replay</h1>
<p>Generated {generated}. {verdict}</p>
<table><tr><th>incident</th><th>profile</th><th>setup</th><th>app</th><th>delivered</th>
<th>result</th><th>reproduced</th><th>gate</th><th>duration</th></tr>
{rows}
</table>
{sections}
</body></html>
"""


def render(report_dir: Path) -> str:
    """The page for a report directory (``report.json`` and the runs it names)."""
    from plotly.offline import get_plotlyjs

    report = json.loads((report_dir / "report.json").read_text())
    sections = []
    for i, run in enumerate(report.get("runs", [])):
        run_dir = Path(run["run_dir"])
        outcome = _outcome(run)
        head = (
            f'<section id="run-{i}"><h2>{html.escape(run["incident"])} [{run["profile"]}]: '
            f"{html.escape(result_label(outcome))}</h2>"
            f"<p>{html.escape(why(outcome) or 'passed')}</p><p>symptoms: "
            + html.escape(", ".join(f"{k}={v}" for k, v in run.get("symptoms", {}).items()))
            + f"</p><p>history: <code>{html.escape(str(run_dir))}</code></p>"
        )
        if run_dir.exists():
            timeline = _Timeline(run_dir, run)
            figure = timeline.draw().to_html(full_html=False, include_plotlyjs=False)
            examples = _examples(run_dir, timeline.start)
        else:
            figure, examples = "<p>the run's history is not here any more</p>", []
        listed = "".join(f"<li><code>{html.escape(e)}</code></li>" for e in examples)
        sections.append(head + figure + (f"<ul>{listed}</ul>" if listed else "") + "</section>")
    passed = report.get("passed")
    return PAGE.format(
        plotly=f"<script>{get_plotlyjs()}</script>",
        generated=html.escape(str(report.get("generated", ""))),
        verdict="Every run passed." if passed else "Some runs failed.",
        rows=_summary_rows(report),
        sections="\n".join(sections),
    )


def write_html(report_dir: Path) -> Path:
    path = report_dir / REPORT_FILE
    path.write_text(render(report_dir), encoding="utf-8")
    return path
