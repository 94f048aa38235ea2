"""The panels of a run's figure in ``report.html``: one function each, from the run's history.

Each panel is a row of the figure on the run's clock (seconds since it started): the incident's
steps, lag and committed offset per partition, records per second, the records each output
partition holds behind its last stable offset (its stalls shaded), what the app and the group
did, and the hot partition's arrivals where there is one. A panel whose stream was not recorded
says so. Panels are registered with ``@panel`` (:data:`PANELS`), in the order this module
defines them, so a new evidence stream adds one panel function; :mod:`.timeline` stacks them.
Plotly is imported inside the functions, so loading this module does not load it.
"""

from __future__ import annotations

import html
import textwrap
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_replay.history.derived import per_second, repeats
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.history.stable_offsets import lso_stalls

from .readings import Event, example_moments, offset_regressions, tombstone_levels

PARTITION_COLOURS = (
    "#636efa",
    "#ef553b",
    "#00cc96",
    "#ab63fa",
    "#ffa15a",
    "#19d3f3",
    "#ff6692",
    "#b6e880",
)
STALL_FILL = "rgba(214,39,40,0.16)"  # a transaction left open: red, faint, so the line shows


@dataclass
class Panel:
    """One row of a run's figure: its traces, or a note saying what was not recorded."""

    title: str
    traces: list[Any] = field(default_factory=list)
    note: str | None = None
    height: int = 170
    yaxis: dict[str, Any] = field(default_factory=dict)


#: A run's entry in ``report.json``: its outcome as written.
Run = dict[str, Any]
#: A panel of a run's figure, from the run's history and its outcome (for a panel that depends
#: on what was measured: the hot partition); None when the run holds nothing it shows, and
#: the figure is drawn as it was before the panel existed.
PanelFunction = Callable[[RecordedRun, Run], "Panel | None"]
#: The figure's panels, top to bottom: a new evidence stream adds one ``@panel`` function.
PANELS: list[PanelFunction] = []


def panel(function: PanelFunction) -> PanelFunction:
    """Register ``function`` as the figure's next panel (in the order this module defines)."""
    PANELS.append(function)
    return function


def _hover(event: Event, skip: tuple[str, ...] = ("ts", "command", "kind")) -> str:
    """An event's fields, one per line, escaped and wrapped to stay readable on hover."""
    lines = []
    for key, value in event.items():
        if key in skip or value is None:
            continue
        text = textwrap.shorten(str(value), 240, placeholder=" ...")
        lines.append("<br>  ".join(textwrap.wrap(html.escape(f"{key}: {text}"), 90)))
    return "<br>".join(lines)


def markers(
    name: str, points: list[tuple[float, Any, str]], symbol: str, colour: str, size: int = 10
) -> Any:
    """One legend entry of markers: (x, y, hover text) each."""
    import plotly.graph_objects as go

    xs, ys, texts = zip(*points, strict=True) if points else ((), (), ())
    return go.Scatter(
        x=list(xs),
        y=list(ys),
        mode="markers",
        name=name,
        hovertext=list(texts),
        hoverinfo="text+x",
        marker={
            "symbol": symbol,
            "size": size,
            "color": colour,
            "line": {"width": 1, "color": colour},
        },
    )


def _colour(partition: int) -> str:
    return PARTITION_COLOURS[partition % len(PARTITION_COLOURS)]


@panel
def steps_panel(recorded: RecordedRun, run: Run | None = None) -> Panel:
    """The incident's steps as bars on the clock, named on the left, details on hover; each
    request a ``kafka_fault`` step acted on is a mark on its bar, when it was acted on."""
    import plotly.graph_objects as go

    steps = recorded.stream("steps")
    if not steps:
        return Panel("steps", note="steps not recorded (events/steps.jsonl)", height=90)
    names = [
        f"{s.get('index', i)} {s.get('do', 'step')}"
        + (f" ({s['label']})" if s.get("label") else "")
        for i, s in enumerate(steps)
    ]
    begins = [recorded.t(s["started"]) for s in steps]
    widths = [max(recorded.t(s["ended"]) - b, 0.12) for s, b in zip(steps, begins, strict=True)]
    hover = [
        f"<b>{html.escape(n)}</b> {w:.1f} s<br>{_hover(s, ('ts', 'kind', 'started', 'ended'))}"
        for n, w, s in zip(names, widths, steps, strict=True)
    ]
    bar = go.Bar(
        y=names,
        x=widths,
        base=begins,
        orientation="h",
        name="steps",
        showlegend=False,
        hovertext=hover,
        hoverinfo="text",
        marker_color="#8c8fd6",
        width=0.7,
    )
    acted = [
        (recorded.t(r["ts"]), name, f"<b>{html.escape(str(r.get('action')))}</b><br>{_hover(r)}")
        for name, step in zip(names, steps, strict=True)
        for r in step.get("requests") or []
    ]
    marks = [markers("request acted on", acted, "x-thin-open", "crimson")] if acted else []
    yaxis = {"autorange": "reversed", "tickfont": {"size": 11}}
    return Panel("steps", [bar, *marks], height=40 + 17 * len(steps), yaxis=yaxis)


@panel
def lag_panel(recorded: RecordedRun, run: Run | None = None) -> Panel:
    """Lag per partition, as an outside monitor sampled it."""
    import plotly.graph_objects as go

    samples = recorded.stream("lag")
    if not samples:
        return Panel("lag per partition", note="lag not recorded (events/lag.jsonl)", height=90)
    services = _services(recorded)
    lines: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for sample in samples:
        lines[(services.get(sample.get("group"), ""), sample["partition"])].append(sample)
    traces = [
        go.Scatter(
            x=[recorded.t(s["ts"]) for s in points],
            y=[s["lag"] for s in points],
            mode="lines",
            name=f"{service} lag p{partition}".lstrip(),
            hovertemplate=f"{service} p{partition}: "
            "lag %{y} at %{x:.1f} s<extra></extra>".lstrip(),
            line={"color": _colour(partition), "width": 1.5, "dash": _dash(services, service)},
        )
        for (service, partition), points in sorted(lines.items())
    ]
    return Panel("lag per partition", traces)


def _services(recorded: RecordedRun) -> dict[str, str]:
    """A pipeline's service names by group (empty for one app): each panel line says whose."""
    services = recorded.meta.get("services") or {}
    return {service["group"]: name for name, service in services.items()}


def _dash(services: dict[str, str], service: str) -> str:
    """One dash per service of a pipeline, so its partitions' lines tell the services apart."""
    names = list(services.values())
    return ("solid", "dot", "dash", "dashdot")[names.index(service) % 4] if service else "solid"


@panel
def offsets_panel(recorded: RecordedRun, run: Run | None = None) -> Panel:
    """The group's committed offset per partition; commits that went back, and tombstones."""
    import plotly.graph_objects as go

    entries = recorded.stream("offsets")
    if entries is None:
        return Panel("committed offset", note="offsets not recorded (events/offsets.jsonl)")
    services = _services(recorded)
    topic = None if services else recorded.input_topic  # a pipeline: each group's own topics
    entries = [e for e in entries if topic is None or e.get("topic") in (None, topic)]
    commits: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for entry in entries:
        if entry.get("kind") == "commit":
            commits[(services.get(entry.get("group"), ""), entry["partition"])].append(entry)
    traces = [
        go.Scatter(
            x=[recorded.t(c["ts"]) for c in points],
            y=[c["offset"] for c in points],
            mode="lines+markers",
            marker={"size": 4},
            line={
                "shape": "hv",
                "width": 1.5,
                "color": _colour(partition),
                "dash": _dash(services, service),
            },
            name=f"{service} committed p{partition}".lstrip(),
            hovertemplate=f"{service} p{partition}: ".lstrip()
            + "committed %{y} at %{x:.1f} s<extra></extra>",
        )
        for (service, partition), points in sorted(commits.items())
    ]
    back = [
        c
        for c in offset_regressions(recorded)
        if c.get("commit_ts_ms") is not None and (topic is None or c.get("topic") in (None, topic))
    ]
    if back:
        points = [
            (
                recorded.t(c["commit_ts_ms"] / 1000),
                c["offset"],
                f"p{c['partition']}: committed {c['offset']}, below the commit before it",
            )
            for c in back
        ]
        traces.append(markers("offset went back", points, "x", "crimson", 12))
    tombstones = tombstone_levels(entries)
    if tombstones:
        points = [
            (
                recorded.t(e["ts"]),
                level,
                f"p{e['partition']}: the group's offset {level} was deleted (tombstone)",
            )
            for e, level in tombstones
        ]
        traces.append(markers("offset expired (tombstone)", points, "diamond", "black", 11))
    note = None if commits or tombstones else "the group committed no offset"
    return Panel("committed offset", traces, note)


RECORDS_TITLE = "records / s"
ROWS_TITLE = "rows written per second"


def records_title(recorded: RecordedRun) -> str:
    """The records panel's title: rows written when the run's output is a ``[sink]`` table."""
    return ROWS_TITLE if recorded.meta.get("database") else RECORDS_TITLE


@panel
def records_panel(recorded: RecordedRun, run: Run | None = None) -> Panel:
    """Inputs acknowledged and outputs delivered (rows written) per second; duplicates and
    losses marked."""
    import plotly.graph_objects as go

    traces: list[Any] = []
    acks = [a for a in recorded.stream("produce") or [] if a.get("kind") == "ack"]
    if acks:
        xs, ys = per_second(recorded.t(a["ts"]) for a in acks)
        traces.append(
            go.Scatter(
                x=[x + 0.5 for x in xs],
                y=ys,
                mode="lines",
                name="inputs acknowledged / s",
                line={"shape": "hvh", "color": "#7f7f7f", "width": 1.5},
            )
        )
    title = records_title(recorded)
    outputs, output = ("rows written", "row") if title == ROWS_TITLE else ("outputs", "output")
    timed = [d for d in recorded.deliveries or [] if d.get("out_ts_ms") is not None]
    why = None
    if recorded.deliveries is None:
        why = "no deliveries.jsonl: the checker did not write it"
    elif recorded.deliveries and not timed:
        why = (
            "the table has no time column: name one in [sink] time_column"
            if output == "row"
            else "the outputs carry no time"
        )
    else:
        xs, ys = per_second(recorded.t(d["out_ts_ms"] / 1000) for d in timed)
        traces.insert(
            0,
            go.Bar(
                x=[x + 0.5 for x in xs],
                y=ys,
                name=f"{outputs} / s",
                marker_color="#636efa",
                width=0.9,
            ),
        )
        again = [
            (
                recorded.t(d["out_ts_ms"] / 1000),
                0,
                f"{d['event_id']} delivered again (input p{d['in_partition']}@{d['in_offset']})",
            )
            for d in repeats(timed)
        ]
        if again:
            traces.append(markers(f"duplicate {output}", again, "triangle-up", "crimson", 9))
    lost = (recorded.check or {}).get("anomalies", {}).get("lost", {})
    points = [
        (recorded.t(ts), 0, f"{e.get('event_id')} acknowledged here, never delivered")
        for e in lost.get("examples", [])
        for ts in example_moments(recorded, "lost", e, recorded.deliveries)
    ]
    if points:
        traces.append(markers(f"lost ({lost.get('count')} in all)", points, "x", "black", 12))
    note = f"{outputs} per second not recorded ({why})" if why else None
    return Panel(title, traces, note, yaxis={"rangemode": "tozero"})


STABLE_TITLE = "output: records held behind the last stable offset"


@panel
def stable_panel(recorded: RecordedRun, run: Run | None = None) -> Panel | None:
    """Records each output partition holds past its last stable offset (``hw - lso``), each
    stall a band: a transaction left open stops read_committed readers (the checker) there.

    None for a run that sampled no stable offsets (older runs), whose figure stays as it was.
    """
    import plotly.graph_objects as go

    samples = recorded.stream("stable")
    if not samples:
        return None
    lines: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for sample in samples:
        lines[(sample["topic"], sample["partition"])].append(sample)
    several = len({topic for topic, _ in lines}) > 1
    labels = {key: f"{key[0]} p{key[1]}" if several else f"p{key[1]}" for key in lines}
    traces: list[Any] = [
        go.Scatter(
            x=[recorded.t(s["ts"]) for s in points],
            y=[s["hw"] - s["lso"] for s in points],
            customdata=[[s["lso"], s["hw"]] for s in points],
            mode="lines",
            name=f"held {labels[key]}",
            line={"color": _colour(i), "width": 1.5},
            hovertemplate=f"{labels[key]}: %{{y}} records held (lso %{{customdata[0]}}, hw "
            "%{customdata[1]}) at %{x:.1f} s<extra></extra>",
        )
        for i, (key, points) in enumerate(sorted(lines.items()))
    ]
    stalls = lso_stalls(samples)
    traces += [
        _stall_band(recorded, stall, labels[(stall["topic"], stall["partition"])], i == 0)
        for i, stall in enumerate(stalls)
    ]
    return Panel(STABLE_TITLE, traces, yaxis={"rangemode": "tozero"})


def _stall_band(recorded: RecordedRun, stall: Event, label: str, first: bool) -> Any:
    """A stall as a shaded rectangle, as high as the records it held; its hover says which
    partition, how long and how many (one legend entry for all of them)."""
    import plotly.graph_objects as go

    begin, end = recorded.t(stall["start"]), recorded.t(stall["end"])
    end, top = max(end, begin + 0.08), stall["held"]
    text = (
        f"<b>LSO stall {html.escape(label)}</b> ({html.escape(str(stall['topic']))})<br>"
        f"{stall['seconds']:.1f} s at LSO {stall['lso']}, {begin:.1f}-{end:.1f} s<br>"
        f"up to {top} records held (hw {stall['hw_start']} to {stall['hw_end']}):<br>"
        "a transaction left open holds read_committed readers here"
    )
    return go.Scatter(
        x=[begin, end, end, begin, begin],
        y=[0, 0, top, top, 0],
        mode="lines",
        fill="toself",
        fillcolor=STALL_FILL,
        line={"width": 0},
        name="LSO stall (transaction left open)",
        legendgroup="lso-stall",
        showlegend=first,
        hoveron="fills",
        text=text,
        hoverinfo="text",
    )


#: Markers of the app's life and reports: (legend name, symbol, colour) by what happened.
APP_STYLES = {
    "start": ("app start", "circle", "#00cc96"),
    "restart": ("app restarted", "circle-open", "#00a67a"),
    "crash": ("app exit (crash or kill)", "square", "#ef553b"),
    "exit": ("app exit (asked or done)", "square-open", "#7f7f7f"),
    "signal": ("signal sent", "x", "#ab63fa"),
    "stop": ("stop asked (SIGTERM)", "line-ns-open", "#7f7f7f"),
    "killed_after_grace": ("killed after grace", "x-thin-open", "black"),
    "crash_loop": ("crash loop", "star", "crimson"),
    "assigned": ("partitions assigned", "triangle-right-open", "#19d3f3"),
    "revoked": ("partitions revoked", "triangle-left-open", "#ffa15a"),
    "lost": ("partitions lost", "triangle-left", "crimson"),
    "commit_rejected": ("commit rejected", "diamond", "crimson"),
    "error": ("client or app error", "hexagram", "#ff6692"),
}


def app_kind(event: Event) -> str | None:
    """Which marker an app event gets (None: not shown, e.g. a commit that went through)."""
    kind = event.get("kind")
    if kind == "start":
        return "restart" if event.get("restart") else "start"
    if kind == "exit":
        return "exit" if event.get("expected") or event.get("completed") else "crash"
    if kind == "commit_result":
        return None if event.get("ok", True) else "commit_rejected"
    if kind in ("client_error", "app_error"):
        return "error"
    return kind if kind in APP_STYLES else None


@panel
def app_panel(recorded: RecordedRun, run: Run | None = None) -> Panel:
    """The app's starts, exits, signals, restarts and crash loops, and what it reported."""
    lifecycle, reports = recorded.stream("lifecycle"), recorded.app or []
    if lifecycle is None:
        return Panel("app", note="app lifecycle not recorded (events/lifecycle.jsonl)")
    grouped: dict[str, list[tuple[float, Any, str]]] = defaultdict(list)
    for event in [*lifecycle, *reports]:
        kind = app_kind(event)
        if kind is not None and "ts" in event:
            where = f"app {event.get('instance', 0)}"
            text = f"<b>{APP_STYLES[kind][0]}</b> ({where})<br>{_hover(event, _APP_SKIP)}"
            grouped[kind].append((recorded.t(event["ts"]), where, text))
    traces = [
        markers(name, grouped[kind], symbol, colour)
        for kind, (name, symbol, colour) in APP_STYLES.items()
        if grouped[kind]
    ]
    instances = sorted({y for points in grouped.values() for _, y, _ in points})
    return Panel(
        "app",
        traces,
        None if traces else "no app events recorded",
        height=max(110, 45 * len(instances) + 40),
        yaxis={"categoryorder": "array", "categoryarray": instances[::-1]},
    )


_APP_SKIP = ("ts", "kind", "command", "instance", "member")

#: The group's events by what the broker logged: (line, legend name, symbol, colour).
GROUP_STYLES = {
    "rebalance": ("rebalances", "rebalance started", "line-ns-open", "#636efa"),
    "stabilized": ("rebalances", "group stabilized (members joined)", "circle", "#00cc96"),
    "leave": ("members", "member left", "triangle-down", "#ffa15a"),
    "removed": ("members", "member removed (fenced or timed out)", "x", "crimson"),
    "producer_id": ("transactions", "producer id given", "diamond-open", "#ab63fa"),
}


@panel
def group_panel(recorded: RecordedRun, run: Run | None = None) -> Panel:
    """Joins, leaves, removals (with their reason) and rebalances, from the broker logs."""
    events = recorded.stream("group")
    if events is None:
        return Panel("group", note="group events not recorded (no broker logs)", height=90)
    traces = []
    for kind, (line, name, symbol, colour) in GROUP_STYLES.items():
        points = [
            (recorded.t(e["ts"]), line, f"<b>{name}</b><br>{_hover(e)}")
            for e in events
            if e.get("kind") == kind
        ]
        if points:
            traces.append(markers(name, points, symbol, colour))
    lines = sorted({t.y[0] for t in traces}, key=["rebalances", "members", "transactions"].index)
    return Panel(
        "group",
        traces,
        None if traces else "the broker logged no group events",
        height=max(110, 40 * len(lines) + 40),
        yaxis={"categoryorder": "array", "categoryarray": lines[::-1]},
    )


@panel
def hot_panel(recorded: RecordedRun, run: Run | None = None) -> Panel | None:
    """The hot partition: how far it was produced, and each batch the app took from it.

    None for a run whose symptoms name no hot partition.
    """
    import plotly.graph_objects as go

    partition = ((run or {}).get("symptoms") or {}).get("hot_partition")
    if not isinstance(partition, int) or isinstance(partition, bool):
        return None
    title = f"hot partition p{partition}"
    acks = [
        a
        for a in recorded.stream("produce") or []
        if a.get("kind") == "ack" and a["partition"] == partition
    ]
    traces: list[Any] = []
    if acks:
        ends, end = [], 0
        for ack in acks:
            end = max(end, ack["offset"] + 1)
            ends.append(end)
        traces.append(
            go.Scatter(
                x=[recorded.t(a["ts"]) for a in acks],
                y=ends,
                mode="lines",
                line={"shape": "hv", "color": "#7f7f7f"},
                name="produced up to (end offset)",
            )
        )
    batches = recorded.arrivals(partition)
    if batches:
        points = [
            (recorded.t(ts), last + 1, f"took offsets {first}-{last} ({last - first + 1} records)")
            for ts, first, last in batches
        ]
        traces.append(markers("arrived at the app (batch)", points, "circle", "#ef553b", 7))
    note = None if batches else "arrivals not recorded (no consumed reports or outputs)"
    return Panel(title, traces, note)
