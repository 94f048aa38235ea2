"""``report.html`` from a real run, rendered in headless Chromium; its pure parts on their own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kafka_replay.history.derived import per_second, repeats
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.report.browser import CANDIDATES, dom, screenshot
from kafka_replay.report.html_report import render
from kafka_replay.report.panels import PANELS, STABLE_TITLE
from kafka_replay.report.readings import example_moments, tombstone_levels
from kafka_replay.report.timeline import figure

needs_chromium = pytest.mark.skipif(
    not any(shutil.which(name) for name in CANDIDATES),
    reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)",
)

#: The stored real runs and the report that listed them (see ``tests/test_rejudge.py``).
DATA = Path(__file__).with_name("data")


def kafka_replay(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_replay.cli", *args]


def stored_report(report: Path, name: str) -> Path:
    """A report directory holding one of the stored real runs (``tests/data/runs``), as
    ``kafka-replay run --report`` wrote it: the run's history under ``runs/``."""
    stored = json.loads((DATA / "report.json").read_text())
    stored["runs"] = [run for run in stored["runs"] if Path(run["run_dir"]).name == name]
    shutil.copytree(DATA / "runs" / name, report / "runs" / name)
    (report / "report.json").write_text(json.dumps(stored))
    return report


@needs_chromium
def test_a_real_runs_report_draws_its_timeline(tmp_path: Path) -> None:
    """A real run of zombie-commit (stored; `run --report` writes the same page at its end)."""
    report = stored_report(tmp_path / "report", "zombie-commit-vulnerable")
    written = subprocess.run(
        kafka_replay("report", str(report)), capture_output=True, text=True, timeout=300
    )
    assert written.returncode == 0, written.stdout + written.stderr
    page = report / "report.html"
    text = page.read_text()
    assert "<script src=" not in text  # plotly.js is inside: it opens offline
    assert text.count("Plotly.newPlot") == 1 and text.count("plotly.js v") == 1  # one copy
    backend = json.loads((report / "report.json").read_text())["backend"]
    assert f"Kafka {_version(report)} · {backend} · classic</td>" in text

    drawn = dom(page)
    assert drawn.count('class="main-svg"') >= 2  # Plotly turned the figure into SVG
    legends = ("lag p0", "committed p1", "offset went back", "outputs / s", "app start",
               "rebalance started", "checker example: committed_offset_regression")  # fmt: skip
    for legend in legends:
        assert legend in drawn, legend

    png = tmp_path / "report.png"
    again = subprocess.run(
        kafka_replay("report", str(report), "--png", str(png)),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert str(page) in again.stdout
    rendering = screenshot(page, png)
    assert rendering.console == []  # no script error, no warning
    image = Image.open(png).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24) or []
    white = next((count for count, rgb in colours if rgb == (255, 255, 255)), 0)
    assert len(colours) > 100  # lines, markers, bands and text, not a blank page
    assert white < 0.9 * image.width * image.height


def _version(report: Path) -> str:
    return str(json.loads((report / "report.json").read_text())["kafka_version"])


@needs_chromium
def test_the_console_check_sees_an_error_in_the_page(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text('<html><body><script>console.error("drawn wrong")</script></body></html>')
    rendering = screenshot(page, tmp_path / "broken.png")
    assert any("drawn wrong" in line for line in rendering.console)


def test_report_needs_a_report_directory(tmp_path: Path) -> None:
    ran = subprocess.run(
        kafka_replay("report", str(tmp_path)), capture_output=True, text=True, timeout=120
    )
    said = " ".join((ran.stdout + ran.stderr).split())  # the console wraps long lines
    assert ran.returncode == 2, said
    assert "has no report.json" in said and "kafka-replay run --report DIR" in said


def _report_dir(tmp_path: Path, runs: list[dict[str, Any]]) -> Path:
    (tmp_path / "report.json").write_text(json.dumps({"kafka_version": "4.4.0", "runs": runs}))
    return tmp_path


def _run(run_dir: Path, **fields: Any) -> dict[str, Any]:
    return {
        "incident": "x", "profile": "vulnerable", "app": "a", "guarantee": "at-least-once",
        "verdict": "unknown", "passed": False, "reproduced": None, "anomalies": {},
        "symptoms": {}, "duration_s": 1.0, "run_dir": str(run_dir), **fields,
    }  # fmt: skip


def test_streams_not_recorded_are_named_in_their_panels(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "x-vulnerable"
    (run_dir / "events").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"started": 100.0}))
    (run_dir / "events" / "lag.jsonl").write_text('{"ts": 101, "partition": 0, "lag": 3}\n{"ts')
    error = "Traceback: the app never became ready"
    page = render(_report_dir(tmp_path, [_run(run_dir, error=error, failed_stage="start-up")]))
    for missing in ("steps not recorded", "offsets not recorded", "outputs per second not",
                    "app lifecycle not recorded", "group events not recorded"):  # fmt: skip
        assert missing in page, missing
    assert "lag p0" in page  # the one complete line of the stream that was there
    assert "error in start-up" in page and "the app never became ready" in page


def test_a_moved_report_finds_its_runs_and_a_lost_history_is_said(tmp_path: Path) -> None:
    moved = tmp_path / "runs" / "x-vulnerable"
    (moved / "events").mkdir(parents=True)
    runs = [_run(Path("/elsewhere/runs/x-vulnerable")), _run(Path("/gone/y-remediated"))]
    page = render(_report_dir(tmp_path, runs))
    assert str(moved) in page and "History not found at <code>/gone/y-remediated" in page


def test_the_commits_the_checker_found_going_back_are_marked(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "x-vulnerable"
    (run_dir / "events").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"started": 100.0, "topics": {"input": "in"}}))
    commits = [{"ts": 101 + i, "kind": "commit", "topic": "in", "partition": 0, "offset": o}
               for i, o in enumerate((5, 3, 1))]  # fmt: skip
    lines = "".join(json.dumps(c) + "\n" for c in commits)
    (run_dir / "events" / "offsets.jsonl").write_text(lines)
    back = [{"topic": "in", "partition": 0, "previous_offset": p, "offset": o,
             "commit_ts_ms": ts} for p, o, ts in ((5, 3, 102_000), (3, 1, 103_000))]  # fmt: skip
    check = {"anomalies": {"committed_offset_regression": {
        "count": 2, "examples": back[:1], "every": back}}}  # fmt: skip
    (run_dir / "check.json").write_text(json.dumps(check))
    drawn = figure(RecordedRun.read(run_dir), _run(run_dir))
    marks = next(t for t in drawn.data if t.name == "offset went back")
    assert (list(marks.x), list(marks.y)) == ([2.0, 3.0], [3, 1])  # every one, not the example


def test_the_figure_draws_the_registered_panels_in_order() -> None:
    names = [draw.__name__ for draw in PANELS]
    assert names == ["steps_panel", "lag_panel", "offsets_panel", "records_panel",
                     "stable_panel", "app_panel", "group_panel", "hot_panel"]  # fmt: skip


def test_a_tombstone_is_drawn_at_the_offset_it_deleted() -> None:
    entries = [
        {"kind": "commit", "partition": 0, "offset": 7},
        {"kind": "tombstone", "partition": 0, "offset": None},
        {"kind": "tombstone", "partition": 1, "offset": None},
    ]
    assert [level for _, level in tombstone_levels(entries)] == [7, 0]


def test_outputs_are_counted_per_second_with_the_quiet_seconds() -> None:
    assert per_second([0.1, 0.5, 2.2]) == ([0.0, 1.0, 2.0], [2, 0, 1])
    assert per_second([]) == ([], [])


def _recorded(**streams: list[dict[str, Any]]) -> RecordedRun:
    app = streams.pop("app", None)
    deliveries = streams.pop("deliveries", None)
    if app is not None:
        streams["app-0"] = app
    meta = {"started": 100.0, "topics": {"input": "in"}}
    return RecordedRun(Path("."), meta, dict(streams), deliveries=deliveries)


def test_a_duplicates_moment_is_its_second_delivery() -> None:
    deliveries = [
        {"event_id": "a", "in_partition": 0, "in_offset": 4, "out_ts_ms": 101_000},
        {"event_id": "b", "in_partition": 0, "in_offset": 5, "out_ts_ms": 101_500},
        {"event_id": "a", "in_partition": 0, "in_offset": 4, "out_ts_ms": 107_000},
    ]
    recorded = _recorded(deliveries=deliveries)
    assert [d["out_ts_ms"] for d in repeats(deliveries)] == [107_000]
    example = {"event_id": "a", "in_partition": 0, "in_offset": 4, "deliveries": 2}
    assert example_moments(recorded, "duplicate", example, deliveries) == [107.0]
    assert example_moments(recorded, "reordered", {"event_id": "b"}, deliveries) == [101.5]


def test_without_outputs_the_apps_reports_say_when_it_took_an_input() -> None:
    consumed = [
        {"ts": 102.0, "kind": "consumed", "partitions": [
            {"topic": "in", "partition": 1, "first": 0, "last": 9}]},
        {"ts": 105.0, "kind": "consumed", "partitions": [
            {"topic": "in", "partition": 1, "first": 3, "last": 12},
            {"topic": "other", "partition": 1, "first": 0, "last": 99}]},
    ]  # fmt: skip
    recorded = _recorded(app=consumed, produce=[
        {"ts": 101.0, "kind": "ack", "event_id": "r", "partition": 1, "offset": 11}])  # fmt: skip
    assert recorded.arrivals(1) == [(102.0, 0, 9), (105.0, 3, 12)]
    again = {"event_id": "d", "in_partition": 1, "in_offset": 4}
    assert example_moments(recorded, "duplicate", again) == [105.0]
    assert example_moments(recorded, "reordered", {"event_id": "r", "out_offset": 3}) == [105.0]
    assert example_moments(recorded, "lost", {"event_id": "r"}) == [101.0]
    assert example_moments(recorded, "unseen_at_deadline", {"ack_ts": 103.5}) == [103.5]


def test_a_real_history_loads_with_every_stream(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "events" / "steps.jsonl").write_text('{"ts": 5, "started": 5, "ended": 6}\n')
    recorded = RecordedRun.read(tmp_path)
    assert recorded.start == 5  # no start in run.json: the earliest event
    assert recorded.stream("steps") and recorded.stream("lag") is None and recorded.app is None


def _stable_run(tmp_path: Path, stable: bool) -> Path:
    """A run whose output p1 stands at LSO 10 from 101 s to 102.5 s as 9 records come behind."""
    run_dir = tmp_path / "runs" / "x-vulnerable"
    (run_dir / "events").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"started": 100.0}))
    (run_dir / "events" / "lag.jsonl").write_text('{"ts": 101, "partition": 0, "lag": 3}\n')
    if stable:  # p0's LSO keeps up with its high watermark; p1's stands at 10, then moves
        rows = [{"ts": 101 + i / 2, "topic": "out", "partition": p, "lso": lso, "hw": hw}
                for i, ((p0, p0_hw), (p1, p1_hw)) in enumerate([
                    ((3, 3), (10, 12)), ((5, 5), (10, 15)), ((8, 8), (10, 17)),
                    ((9, 9), (10, 19)), ((12, 12), (19, 19))])
                for p, lso, hw in ((0, p0, p0_hw), (1, p1, p1_hw))]  # fmt: skip
        lines = "".join(json.dumps(row) + "\n" for row in rows)
        (run_dir / "events" / "stable.jsonl").write_text(lines)
        settled = {"kind": "settled", "waited_s": 70.2, "open": [], "held": [
            {"topic": "out", "partition": 1, "lso": 19, "hw": 23, "held": 4}]}  # fmt: skip
        (run_dir / "events" / "transactions.jsonl").write_text(json.dumps(settled) + "\n")
    return run_dir


def test_a_stalled_last_stable_offset_is_a_band_on_its_partition(tmp_path: Path) -> None:
    run_dir = _stable_run(tmp_path, stable=True)
    page = render(_report_dir(tmp_path, [_run(run_dir, symptoms={"lso_stall_s": 1.5})]))
    assert STABLE_TITLE in page and "held p1" in page and "held p0" in page
    assert "LSO stall (transaction left open)" in page  # the band's legend entry
    assert "LSO stall p1" in page and "1.5 s at LSO 10" in page and "up to 9 records" in page
    assert "LSO stall p0" not in page  # p0's LSO kept up with its high watermark
    assert "still held by an open transaction when the checker read (after 70.2 s): " in page
    assert "out p1: 4 records behind LSO 19" in page

    drawn = figure(RecordedRun.read(run_dir), _run(run_dir))
    band = next(t for t in drawn.data if t.name == "LSO stall (transaction left open)")
    assert (min(band.x), max(band.x), max(band.y)) == (1.0, 2.5, 9)  # on the run's clock


def test_a_run_without_stable_offsets_is_drawn_as_before(tmp_path: Path) -> None:
    run_dir = _stable_run(tmp_path, stable=False)
    page = render(_report_dir(tmp_path, [_run(run_dir)]))
    assert STABLE_TITLE not in page and "LSO stall" not in page and "still held" not in page
    drawn = figure(RecordedRun.read(run_dir), _run(run_dir))
    titles = [a.text for a in drawn.layout.annotations]  # the panels' titles, then notes
    assert titles[:7] == ["steps", "lag per partition", "committed offset", "records / s", "app",
                          "group", "steps not recorded (events/steps.jsonl)"]  # fmt: skip


def _table_run(tmp_path: Path, timed: bool) -> Path:
    """A run whose app wrote rows to a ``[sink]`` table: e1 written twice, at 103.5 s."""
    run_dir = tmp_path / "runs" / "x-vulnerable"
    (run_dir / "events").mkdir(parents=True)
    meta = {"started": 100.0, "topics": {"input": "in"}, "database": "postgresql://127.0.0.1/x",
            "database_schema": "public"}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(meta))
    acks = [{"ts": 101 + i / 4, "kind": "ack", "event_id": f"e{i}", "partition": 0,
             "offset": i} for i in range(4)]  # fmt: skip
    (run_dir / "events" / "produce.jsonl").write_text("".join(json.dumps(a) + "\n" for a in acks))
    rows = [("e0", 0, 101_200), ("e1", 1, 101_400), ("e2", 2, 102_100), ("e3", 3, 102_300),
            ("e1", 1, 103_500)]  # fmt: skip
    deliveries = [{"event_id": e, "in_partition": 0, "in_offset": o, "out_partition": 0,
                   "out_offset": n, "out_ts_ms": ms if timed else None}
                  for n, (e, o, ms) in enumerate(rows)]  # fmt: skip
    lines = "".join(json.dumps(d) + "\n" for d in deliveries)
    (run_dir / "deliveries.jsonl").write_text(lines)
    duplicate = {"event_id": "e1", "in_partition": 0, "in_offset": 1, "deliveries": 2}
    check = {"anomalies": {"duplicate": {"count": 1, "examples": [duplicate]}}}
    (run_dir / "check.json").write_text(json.dumps(check))
    return run_dir


def test_a_tables_rows_written_per_second_are_drawn_beside_the_inputs(tmp_path: Path) -> None:
    run_dir = _table_run(tmp_path, timed=True)
    page = render(_report_dir(tmp_path, [_run(run_dir)]))
    assert "rows written per second" in page and "duplicate row" in page
    assert "The timeline could not be drawn" not in page
    drawn = figure(RecordedRun.read(run_dir), _run(run_dir))
    titles = [a.text for a in drawn.layout.annotations]
    assert "rows written per second" in titles and "records / s" not in titles
    rows = next(t for t in drawn.data if t.name == "rows written / s")
    assert (list(rows.x), list(rows.y)) == ([1.5, 2.5, 3.5], [2, 2, 1])
    assert next(t for t in drawn.data if t.name == "inputs acknowledged / s")
    again = next(t for t in drawn.data if t.name == "duplicate row")
    assert list(again.x) == [3.5]  # the second time e1 was written
    star = next(t for t in drawn.data if t.name == "checker example: duplicate")
    assert list(star.x) == [3.5]  # on the rows panel


def test_a_table_without_a_time_column_says_so(tmp_path: Path) -> None:
    run_dir = _table_run(tmp_path, timed=False)
    page = render(_report_dir(tmp_path, [_run(run_dir)]))
    assert "The timeline could not be drawn" not in page
    drawn = figure(RecordedRun.read(run_dir), _run(run_dir))
    titles = [a.text for a in drawn.layout.annotations]
    assert "rows written per second" in titles
    assert "rows written per second not recorded (the table has no time column: name one in " \
        "[sink] time_column)" in titles  # fmt: skip
    assert not any(t.name in ("rows written / s", "duplicate row") for t in drawn.data)


def test_each_request_a_fault_acted_on_is_marked_on_its_step(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "x-vulnerable"
    (run_dir / "events").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"started": 100.0, "topics": {"input": "in"}}))
    lost = [{"ts": 103.0 + i, "proxy": "broker-1", "action": "lose_answer", "api": "Produce",
             "api_version": 11, "correlation_id": 40 + i, "client_id": "app"}
            for i in range(2)]  # fmt: skip
    steps = [{"kind": "step", "index": 2, "do": "kafka_fault", "started": 102.0, "ended": 105.0,
              "acted": 2, "requests": lost}]  # fmt: skip
    (run_dir / "events" / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    drawn = figure(RecordedRun.read(run_dir), _run(run_dir))
    marks = next(t for t in drawn.data if t.name == "request acted on")
    assert list(marks.x) == [3.0, 4.0] and set(marks.y) == {"2 kafka_fault"}
    assert "correlation_id: 41" in marks.hovertext[1]
