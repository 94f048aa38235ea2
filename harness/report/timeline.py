"""One run's figure in ``report.html``: its panels stacked on one time axis, the checker's
examples starred where they happened.

Plots are drawn by Plotly: a well-kept library whose Python package carries plotly.js, so the
page embeds the script once (not once per figure), opens offline, and every marker says what it
is on hover. :func:`figure` draws every registered panel (:data:`.panels.PANELS`) as a row on
the run's clock (seconds since it started), each with its own legend on its right, the
incident's steps as faint bands through them all, and a star per checker example on the panel
its kind belongs to.
"""

from __future__ import annotations

import html
import textwrap
from collections import Counter, defaultdict
from typing import Any

from kafka_replay.history.recorded import RecordedRun

from .panels import PANELS, Panel, markers, records_title
from .readings import example_moments, example_text

#: Faint fills for the steps' bands, in turn, so that neighbouring steps stay apart.
BAND_FILLS = ("rgba(99,110,250,0.07)", "rgba(0,204,150,0.08)", "rgba(255,161,90,0.09)")
LEFT_MARGIN, RIGHT_MARGIN = 190, 250  # step names on the left, each panel's legend on the right
LEGEND_ROW_PX = 19

#: Where each kind of checker example is marked: the panel it belongs to.
EXAMPLE_PANEL = {
    "committed_offset_regression": "committed offset",
    "commit_by_non_owner": "committed offset",
    "stuck_lag": "lag per partition",
}


def _example_traces(recorded: RecordedRun, rows: dict[str, int]) -> list[tuple[int, Any]]:
    """A star per checker example, on the panel its kind belongs to, at its moment."""
    by_row: dict[tuple[int, str], list[tuple[float, Any, str]]] = defaultdict(list)
    for prefix, check, outputs in recorded.checks():
        for kind, anomaly in (check.get("anomalies") or {}).items():
            panel = EXAMPLE_PANEL.get(kind, records_title(recorded))
            if kind == "lost" and not prefix:
                continue  # the records panel marks them already, with the count
            for example in anomaly.get("examples", []) if panel in rows else []:
                y = example.get("offset", 0) if panel == "committed offset" else 0
                y = example.get("lag", y) if panel == "lag per partition" else y
                text = "<br>".join(textwrap.wrap(html.escape(example_text(example)), 90))
                name = f"{prefix}{kind}"
                by_row[(rows[panel], name)] += [
                    (recorded.t(ts), y, f"<b>{name}</b><br>{text}")
                    for ts in example_moments(recorded, kind, example, outputs)
                ]
    return [
        (row, markers(f"checker example: {name}", points, "star", "#d62728", 13))
        for (row, name), points in by_row.items()
        if points
    ]


def figure(recorded: RecordedRun, outcome: dict[str, Any]) -> Any:
    """Every panel of a run stacked on one time axis, each with its legend on its right."""
    from plotly.subplots import make_subplots

    found = (draw(recorded, outcome) for draw in PANELS)
    panels = [panel for panel in found if panel is not None]  # e.g. older runs: no stable offsets
    rows = {panel.title: i for i, panel in enumerate(panels, start=1)}
    extra = _example_traces(recorded, rows)
    legend_rows = Counter(row for row, _ in extra)
    heights = [
        max(p.height, LEGEND_ROW_PX * (_legend_entries(p) + legend_rows[i + 1]) + 20)
        for i, p in enumerate(panels)
    ]
    gap = 46
    total = sum(heights) + gap * (len(panels) - 1)
    fig = make_subplots(
        rows=len(panels),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=gap / total,
        subplot_titles=[p.title for p in panels],
        row_heights=heights,
    )
    fig.update_annotations(font_size=14)  # the panels' titles, the only annotations yet
    for i, panel in enumerate(panels, start=1):
        for trace in panel.traces or [_placeholder()]:
            fig.add_trace(trace, row=i, col=1)
        if panel.note:
            fig.add_annotation(
                text=html.escape(panel.note),
                showarrow=False,
                row=i,
                col=1,
                xref="x domain",
                yref="y domain",
                x=0.5,
                y=0.5,
                font={"color": "#888", "size": 12},
            )
        fig.update_yaxes(panel.yaxis, row=i, col=1)
    for row, trace in extra:
        fig.add_trace(trace, row=row, col=1)
    _legends(fig, len(panels))
    _bands(fig, recorded)
    fig.update_layout(
        height=total + 90,
        margin={"l": LEFT_MARGIN, "r": RIGHT_MARGIN, "t": 30, "b": 50},
        hovermode="closest",
        plot_bgcolor="white",
        font={"size": 12},
        bargap=0.05,
    )
    fig.update_xaxes(showgrid=True, gridcolor="#eee", zeroline=False, showticklabels=True)
    fig.update_yaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_xaxes(title_text="seconds since the run started", row=len(panels), col=1)
    return fig


def _legend_entries(panel: Panel) -> int:
    """The panel's lines in its legend: every stall band shares one entry."""
    return sum(trace.showlegend is not False for trace in panel.traces)


def _placeholder() -> Any:
    """An invisible trace: plotly.js draws no axes (nor notes on them) for a panel without one."""
    import plotly.graph_objects as go

    return go.Scatter(x=[], y=[], showlegend=False, hoverinfo="skip")


def _legends(fig: Any, rows: int) -> None:
    """One legend per panel, beside it, so each marker is explained where it is drawn."""
    for row in range(1, rows + 1):
        name = "legend" if row == 1 else f"legend{row}"
        axis = "yaxis" if row == 1 else f"yaxis{row}"
        top = fig.layout[axis].domain[1]
        fig.update_layout(
            {
                name: {
                    "x": 1.01,
                    "y": top,
                    "xanchor": "left",
                    "yanchor": "top",
                    "font": {"size": 11},
                    "tracegroupgap": 2,
                }
            }
        )
        for trace in fig.select_traces(row=row, col=1):
            trace.legend = name


def _bands(fig: Any, recorded: RecordedRun) -> None:
    """The incident's steps as faint bands through every panel."""
    for i, step in enumerate(recorded.stream("steps") or []):
        begin, end = recorded.t(step["started"]), recorded.t(step["ended"])
        fig.add_vrect(
            x0=begin,
            x1=max(end, begin + 0.08),
            fillcolor=BAND_FILLS[i % len(BAND_FILLS)],
            line_width=0,
            layer="below",
        )
