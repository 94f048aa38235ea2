"""``report.html``: one self-contained page that shows what happened in every run.

Plots are drawn by Plotly: a well-kept library whose Python package carries plotly.js, so the
page embeds the script once (not once per figure), opens offline, and every marker says what it
is on hover. Each run gets one figure of stacked panels on a shared clock (seconds since the run
started): the incident's steps, lag and committed offset per partition, records per second,
the records each output partition holds behind its last stable offset (its stalls shaded),
what the app and the group did, and the hot partition's arrivals where there is one. The
checker's examples, and the commits it found going back, are marked at the moment they
happened; the examples are listed under the figure. A run is read by
:class:`~kafka_replay.history.recorded.RecordedRun`, tolerantly: a panel whose stream was not
recorded says so. Panels are registered with ``@panel`` (:data:`PANELS`), so a new evidence
stream adds one panel function.
"""

from __future__ import annotations

import html
import json
import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_replay.history.derived import per_second, repeats
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.history.stable_offsets import lso_stalls

from .outcome import Outcome, delivered, result_label

REPORT_FILE = "report.html"
#: Faint fills for the steps' bands, in turn, so that neighbouring steps stay apart.
BAND_FILLS = ("rgba(99,110,250,0.07)", "rgba(0,204,150,0.08)", "rgba(255,161,90,0.09)")
PARTITION_COLOURS = (
    "#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880",
)  # fmt: skip
LEFT_MARGIN, RIGHT_MARGIN = 190, 250  # step names on the left, each panel's legend on the right
LEGEND_ROW_PX = 19
STALL_FILL = "rgba(214,39,40,0.16)"  # a transaction left open: red, faint, so the line shows
Event = dict[str, Any]


# --- what the streams say (pure, tested on their own) --------------------------------------


def offset_regressions(recorded: RecordedRun) -> list[Event]:
    """The commits the checker found below their partition's previous one: every one, from
    ``check.json`` (a check from before it carried them all: its examples)."""
    anomalies = (recorded.check or {}).get("anomalies") or {}
    found = anomalies.get("committed_offset_regression") or {}
    return list(found.get("every", found.get("examples", [])))


def tombstone_levels(entries: Iterable[Event]) -> list[tuple[Event, int]]:
    """Each tombstone with the offset it deleted, so its marker sits on the partition's line."""
    last: dict[int, int] = {}
    found = []
    for entry in entries:
        partition, offset = entry["partition"], entry.get("offset")
        if entry.get("kind") == "tombstone":
            found.append((entry, last.get(partition, 0)))
        elif offset is not None:
            last[partition] = offset
    return found


def input_times(
    recorded: RecordedRun, partition: int, offset: int, outputs: list[Event] | None
) -> list[float]:
    """When input ``partition@offset`` went through: from ``outputs``, else the app's reports."""
    if outputs:
        return [
            d["out_ts_ms"] / 1000
            for d in outputs
            if d["in_partition"] == partition and d["in_offset"] == offset
        ]
    return [ts for ts, first, last in recorded.arrivals(partition) if first <= offset <= last]


#: Where each kind of checker example is marked: the panel it belongs to.
EXAMPLE_PANEL = {
    "committed_offset_regression": "committed offset",
    "commit_by_non_owner": "committed offset",
    "stuck_lag": "lag per partition",
}


def example_moments(
    recorded: RecordedRun, kind: str, example: Event, outputs: list[Event] | None = None
) -> list[float]:
    """When a checker example happened (Unix seconds); empty when the history cannot tell.

    ``outputs`` are the matched output records of the check the example comes from (those
    with no time, a table's without a time column, tell none).
    """
    outputs = [d for d in outputs or [] if d.get("out_ts_ms") is not None]
    for key, scale in (("ts", 1), ("commit_ts_ms", 1000), ("out_ts_ms", 1000), ("ack_ts", 1)):
        if example.get(key) is not None:
            return [example[key] / scale]
    ack = _ack(recorded, example.get("event_id"))
    if kind == "lost":  # never delivered: the moment it was acknowledged
        return [ack["ts"]] if ack else []
    if kind == "stuck_lag":  # still behind when the run ended
        lag = [s for s in recorded.stream("lag") or [] if s["partition"] == example["partition"]]
        return [lag[-1]["ts"]] if lag else []
    if "in_partition" in example and "in_offset" in example:
        times = input_times(recorded, example["in_partition"], example["in_offset"], outputs)
        again = kind in ("duplicate", "reprocessing_after_reset")
        return times[1:] if again and len(times) > 1 else times
    if outputs and "event_id" in example:
        return [d["out_ts_ms"] / 1000 for d in outputs if d["event_id"] == example["event_id"]][:1]
    if ack is not None:  # known only by its id: when the app took its input
        return input_times(recorded, ack["partition"], ack["offset"], outputs)[:1]
    return []


def _ack(recorded: RecordedRun, event_id: str | None) -> Event | None:
    """The producer's acknowledgement of ``event_id``: where and when its input was written."""
    if event_id is None:
        return None
    produce = recorded.stream("produce") or []
    return next((e for e in produce if e.get("kind") == "ack" and e["event_id"] == event_id), None)


#: An example's fields not worth a line of text (its moment is shown apart).
EXAMPLE_NOISE = ("context", "ts", "commit_ts_ms", "ack_ts", "out_ts_ms", "group", "topic")


def example_text(example: Event) -> str:
    return ", ".join(f"{k}={v}" for k, v in example.items() if k not in EXAMPLE_NOISE)


# --- the panels of one run's figure -----------------------------------------------------


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


def _markers(
    name: str, points: list[tuple[float, Any, str]], symbol: str, colour: str, size: int = 10
) -> Any:
    """One legend entry of markers: (x, y, hover text) each."""
    import plotly.graph_objects as go

    xs, ys, texts = zip(*points, strict=True) if points else ((), (), ())
    return go.Scatter(
        x=list(xs), y=list(ys), mode="markers", name=name, hovertext=list(texts),
        hoverinfo="text+x", marker={"symbol": symbol, "size": size, "color": colour,
                                    "line": {"width": 1, "color": colour}},
    )  # fmt: skip


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
    names = [f"{s.get('index', i)} {s.get('do', 'step')}" + (
        f" ({s['label']})" if s.get("label") else "") for i, s in enumerate(steps)]  # fmt: skip
    begins = [recorded.t(s["started"]) for s in steps]
    widths = [max(recorded.t(s["ended"]) - b, 0.12) for s, b in zip(steps, begins, strict=True)]
    hover = [
        f"<b>{html.escape(n)}</b> {w:.1f} s<br>{_hover(s, ('ts', 'kind', 'started', 'ended'))}"
        for n, w, s in zip(names, widths, steps, strict=True)
    ]
    bar = go.Bar(
        y=names, x=widths, base=begins, orientation="h", name="steps", showlegend=False,
        hovertext=hover, hoverinfo="text", marker_color="#8c8fd6", width=0.7,
    )  # fmt: skip
    acted = [
        (recorded.t(r["ts"]), name, f"<b>{html.escape(str(r.get('action')))}</b><br>{_hover(r)}")
        for name, step in zip(names, steps, strict=True)
        for r in step.get("requests") or []
    ]
    marks = [_markers("request acted on", acted, "x-thin-open", "crimson")] if acted else []
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
            x=[recorded.t(s["ts"]) for s in points], y=[s["lag"] for s in points], mode="lines",
            name=f"{service} lag p{partition}".lstrip(), hovertemplate=f"{service} p{partition}: "
            "lag %{y} at %{x:.1f} s<extra></extra>".lstrip(),
            line={"color": _colour(partition), "width": 1.5, "dash": _dash(services, service)},
        )
        for (service, partition), points in sorted(lines.items())
    ]  # fmt: skip
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
            x=[recorded.t(c["ts"]) for c in points], y=[c["offset"] for c in points],
            mode="lines+markers", marker={"size": 4}, line={"shape": "hv", "width": 1.5,
            "color": _colour(partition), "dash": _dash(services, service)},
            name=f"{service} committed p{partition}".lstrip(),
            hovertemplate=f"{service} p{partition}: ".lstrip()
            + "committed %{y} at %{x:.1f} s<extra></extra>",
        )
        for (service, partition), points in sorted(commits.items())
    ]  # fmt: skip
    back = [c for c in offset_regressions(recorded) if c.get("commit_ts_ms") is not None
            and (topic is None or c.get("topic") in (None, topic))]  # fmt: skip
    if back:
        points = [(recorded.t(c["commit_ts_ms"] / 1000), c["offset"], f"p{c['partition']}: "
                   f"committed {c['offset']}, below the commit before it")
                  for c in back]  # fmt: skip
        traces.append(_markers("offset went back", points, "x", "crimson", 12))
    tombstones = tombstone_levels(entries)
    if tombstones:
        points = [(recorded.t(e["ts"]), level, f"p{e['partition']}: the group's offset "
                   f"{level} was deleted (tombstone)") for e, level in tombstones]  # fmt: skip
        traces.append(_markers("offset expired (tombstone)", points, "diamond", "black", 11))
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
        traces.append(go.Scatter(
            x=[x + 0.5 for x in xs], y=ys, mode="lines", name="inputs acknowledged / s",
            line={"shape": "hvh", "color": "#7f7f7f", "width": 1.5},
        ))  # fmt: skip
    title = records_title(recorded)
    outputs, output = ("rows written", "row") if title == ROWS_TITLE else ("outputs", "output")
    timed = [d for d in recorded.deliveries or [] if d.get("out_ts_ms") is not None]
    why = None
    if recorded.deliveries is None:
        why = "no deliveries.jsonl: the checker did not write it"
    elif recorded.deliveries and not timed:
        why = ("the table has no time column: name one in [sink] time_column"
               if output == "row" else "the outputs carry no time")  # fmt: skip
    else:
        xs, ys = per_second(recorded.t(d["out_ts_ms"] / 1000) for d in timed)
        traces.insert(0, go.Bar(x=[x + 0.5 for x in xs], y=ys, name=f"{outputs} / s",
                                marker_color="#636efa", width=0.9))  # fmt: skip
        again = [(recorded.t(d["out_ts_ms"] / 1000), 0, f"{d['event_id']} delivered again "
                  f"(input p{d['in_partition']}@{d['in_offset']})") for d in repeats(
                  timed)]  # fmt: skip
        if again:
            traces.append(_markers(f"duplicate {output}", again, "triangle-up", "crimson", 9))
    lost = (recorded.check or {}).get("anomalies", {}).get("lost", {})
    points = [
        (recorded.t(ts), 0, f"{e.get('event_id')} acknowledged here, never delivered")
        for e in lost.get("examples", [])
        for ts in example_moments(recorded, "lost", e, recorded.deliveries)
    ]
    if points:
        traces.append(_markers(f"lost ({lost.get('count')} in all)", points, "x", "black", 12))
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
            x=[recorded.t(s["ts"]) for s in points], y=[s["hw"] - s["lso"] for s in points],
            customdata=[[s["lso"], s["hw"]] for s in points], mode="lines",
            name=f"held {labels[key]}", line={"color": _colour(i), "width": 1.5},
            hovertemplate=f"{labels[key]}: %{{y}} records held (lso %{{customdata[0]}}, hw "
                          "%{customdata[1]}) at %{x:.1f} s<extra></extra>",
        )
        for i, (key, points) in enumerate(sorted(lines.items()))
    ]  # fmt: skip
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
    text = (f"<b>LSO stall {html.escape(label)}</b> ({html.escape(str(stall['topic']))})<br>"
            f"{stall['seconds']:.1f} s at LSO {stall['lso']}, {begin:.1f}-{end:.1f} s<br>"
            f"up to {top} records held (hw {stall['hw_start']} to {stall['hw_end']}):<br>"
            "a transaction left open holds read_committed readers here")  # fmt: skip
    return go.Scatter(
        x=[begin, end, end, begin, begin], y=[0, 0, top, top, 0], mode="lines", fill="toself",
        fillcolor=STALL_FILL, line={"width": 0}, name="LSO stall (transaction left open)",
        legendgroup="lso-stall", showlegend=first, hoveron="fills", text=text, hoverinfo="text",
    )  # fmt: skip


def held_at_check(recorded: RecordedRun) -> str | None:
    """The output partitions an open transaction still held when the checker read the output:
    the outputs behind it were neither delivered nor lost, so they were not judged."""
    settled = [e for e in recorded.stream("transactions") or [] if e.get("kind") == "settled"]
    held = settled[-1].get("held") if settled else None
    if not held:
        return None
    rows = ", ".join(
        f"{row.get('topic')} p{row.get('partition')}: {row.get('held')} records behind "
        f"LSO {row.get('lso')}"
        for row in held
    )
    waited = settled[-1].get("waited_s")
    return f"still held by an open transaction when the checker read (after {waited} s): {rows}"


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
        _markers(name, grouped[kind], symbol, colour)
        for kind, (name, symbol, colour) in APP_STYLES.items()
        if grouped[kind]
    ]
    instances = sorted({y for points in grouped.values() for _, y, _ in points})
    return Panel("app", traces, None if traces else "no app events recorded",
                 height=max(110, 45 * len(instances) + 40),
                 yaxis={"categoryorder": "array", "categoryarray": instances[::-1]})  # fmt: skip


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
        points = [(recorded.t(e["ts"]), line, f"<b>{name}</b><br>{_hover(e)}")
                  for e in events if e.get("kind") == kind]  # fmt: skip
        if points:
            traces.append(_markers(name, points, symbol, colour))
    lines = sorted({t.y[0] for t in traces}, key=["rebalances", "members", "transactions"].index)
    return Panel("group", traces, None if traces else "the broker logged no group events",
                 height=max(110, 40 * len(lines) + 40),
                 yaxis={"categoryorder": "array", "categoryarray": lines[::-1]})  # fmt: skip


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
    acks = [a for a in recorded.stream("produce") or [] if a.get("kind") == "ack"
            and a["partition"] == partition]  # fmt: skip
    traces: list[Any] = []
    if acks:
        ends, end = [], 0
        for ack in acks:
            end = max(end, ack["offset"] + 1)
            ends.append(end)
        traces.append(go.Scatter(
            x=[recorded.t(a["ts"]) for a in acks], y=ends, mode="lines", line={"shape": "hv",
            "color": "#7f7f7f"}, name="produced up to (end offset)",
        ))  # fmt: skip
    batches = recorded.arrivals(partition)
    if batches:
        points = [(recorded.t(ts), last + 1, f"took offsets {first}-{last} "
                   f"({last - first + 1} records)") for ts, first, last in batches]  # fmt: skip
        traces.append(_markers("arrived at the app (batch)", points, "circle", "#ef553b", 7))
    note = None if batches else "arrivals not recorded (no consumed reports or outputs)"
    return Panel(title, traces, note)


def example_lines(recorded: RecordedRun) -> list[tuple[str, float | None, str]]:
    """The checker's examples: (anomaly, moment in seconds or None, one line of text)."""
    found = []
    for prefix, check, outputs in recorded.checks():
        for kind, anomaly in (check.get("anomalies") or {}).items():
            for example in anomaly.get("examples", []):
                moments = example_moments(recorded, kind, example, outputs)
                at = recorded.t(moments[0]) if moments else None
                count = anomaly.get("count", 0)
                found.append(
                    (kind, at, f"{prefix}{kind} ({count} in all): {example_text(example)}")
                )
    return found


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
        (row, _markers(f"checker example: {name}", points, "star", "#d62728", 13))
        for (row, name), points in by_row.items()
        if points
    ]


# --- one run's figure ------------------------------------------------------------------


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
        rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=gap / total,
        subplot_titles=[p.title for p in panels], row_heights=heights,
    )  # fmt: skip
    fig.update_annotations(font_size=14)  # the panels' titles, the only annotations yet
    for i, panel in enumerate(panels, start=1):
        for trace in panel.traces or [_placeholder()]:
            fig.add_trace(trace, row=i, col=1)
        if panel.note:
            fig.add_annotation(
                text=html.escape(panel.note), showarrow=False, row=i, col=1, xref="x domain",
                yref="y domain", x=0.5, y=0.5, font={"color": "#888", "size": 12},
            )  # fmt: skip
        fig.update_yaxes(panel.yaxis, row=i, col=1)
    for row, trace in extra:
        fig.add_trace(trace, row=row, col=1)
    _legends(fig, len(panels))
    _bands(fig, recorded)
    fig.update_layout(
        height=total + 90, margin={"l": LEFT_MARGIN, "r": RIGHT_MARGIN, "t": 30, "b": 50},
        hovermode="closest", plot_bgcolor="white", font={"size": 12},
        bargap=0.05,
    )  # fmt: skip
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
        fig.update_layout({name: {"x": 1.01, "y": top, "xanchor": "left", "yanchor": "top",
                                  "font": {"size": 11}, "tracegroupgap": 2}})  # fmt: skip
        for trace in fig.select_traces(row=row, col=1):
            trace.legend = name


def _bands(fig: Any, recorded: RecordedRun) -> None:
    """The incident's steps as faint bands through every panel."""
    for i, step in enumerate(recorded.stream("steps") or []):
        begin, end = recorded.t(step["started"]), recorded.t(step["ended"])
        fig.add_vrect(
            x0=begin, x1=max(end, begin + 0.08), fillcolor=BAND_FILLS[i % len(BAND_FILLS)],
            line_width=0, layer="below",
        )  # fmt: skip


# --- the page ----------------------------------------------------------------------------


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
    head = ("incident", "profile", "Kafka · backend · protocol", "app",
            "verdict (declared)", "result", "reproduced", "gate", "duration")  # fmt: skip
    rows = []
    for i, run in enumerate(report.get("runs", [])):
        outcome = Outcome.from_json(run)
        gate = outcome.gate
        reproduced = {True: "yes", False: "no"}.get(outcome.reproduced, "-")
        cells = [
            f'<a href="#run-{i}">{html.escape(outcome.incident)}</a>',
            html.escape(outcome.profile), html.escape(_setup(report, run)),
            f"<code>{html.escape(outcome.app)}</code>",
            html.escape(f"{delivered(outcome)} ({outcome.guarantee})"),
            html.escape(result_label(outcome)), reproduced,
            f'<b class="{_css_class(gate)}">{gate}</b>',
            f"{outcome.duration_s:.0f} s",
        ]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{h}</th>" for h in head)
    return f"<table><tr>{header}</tr>\n" + "\n".join(rows) + "</table>"


def _css_class(gate: str) -> str:
    return gate.replace("/", "")  # n/a -> na


def _facts(run: dict[str, Any]) -> str:
    """A run's result, reasons, error and symptoms, above its timeline."""
    outcome = Outcome.from_json(run)
    items = [f"<li>result: <b>{html.escape(result_label(outcome))}</b>; delivered "
             f"{html.escape(delivered(outcome))}, declared {html.escape(outcome.guarantee)}; "
             f"{outcome.gate}</li>"]  # fmt: skip
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in outcome.reasons)
    items.append(f"<li>reasons: <ul>{reasons}</ul></li>" if reasons else "<li>reasons: none</li>")
    if outcome.error:
        items.append(f'<li class="FAIL">error in {html.escape(str(outcome.failed_stage))}:'
                     f"<pre>{html.escape(outcome.error)}</pre></li>")  # fmt: skip
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
    parts = [f'<section id="run-{index}"><h2>{html.escape(title)} <a class="top" '
             f'href="#top">top</a></h2>', _facts(run)]  # fmt: skip
    run_dir = locate(report_dir, run)
    if run_dir is None:
        parts.append(f"<p>History not found at <code>{html.escape(str(run.get('run_dir')))}"
                     "</code> (nor under runs/ here): no timeline.</p>")  # fmt: skip
        return "".join(parts) + "</section>"
    parts.append(f"<p>history: <code>{html.escape(str(run_dir))}</code></p>")
    try:
        recorded = RecordedRun.read(run_dir)
        held = held_at_check(recorded)
        if held:
            parts.append(f'<p class="na">{html.escape(held)}</p>')
        drawn = figure(recorded, run).to_html(
            full_html=False, include_plotlyjs=False, div_id=f"timeline-{index}",
            config={"displaylogo": False, "responsive": True},
        )  # fmt: skip
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
