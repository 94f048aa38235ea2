"""``kafka-replay report DIR``: a report directory's page again, its shards merged into it
(``--merge``), or its run times kept for ``--shard`` (``--durations``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafka_replay.console import make_console
from kafka_replay.replay.settings import add_path_option

console = make_console(stderr=True)


def add_report_command(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="write report.html again from a report directory (--report DIR of run), or merge "
        "the reports of run --shard K/N into it",
    )
    report.add_argument("directory", type=Path, metavar="DIR")
    add_path_option(
        report,
        "--png",
        "FILE",
        "also render the page to a PNG with headless Chromium",
    )
    report.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="SHARD_DIR",
        help="write DIR's report.json, report.md, report.html and junit.xml from the report "
        "directories of `kafka-replay run --shard K/N` (every shard once); exits as run would. "
        "Given the --out directories of `kafka-replay explore --shard K/N`: their findings and "
        "one explore.md, exiting as explore would",
    )
    add_path_option(
        report,
        "--durations",
        "FILE",
        "write the runs' seconds into FILE ('incident profile': seconds, as "
        "incidents/durations.json holds them; its other runs kept), not report.html",
    )
    report.set_defaults(run=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from kafka_replay.report.browser import BrowserMissing, screenshot
    from kafka_replay.report.html_report import REPORT_FILE, write_html

    if args.merge and any((shard / "explore.json").exists() for shard in args.merge):
        return _merge_explorations(args.directory, args.merge)
    code = _merge(args.directory, args.merge) if args.merge else 0
    if not (args.directory / "report.json").exists():
        raise ValueError(
            f"{args.directory} has no report.json: give the directory that "
            "`kafka-replay run --report DIR` wrote"
        )
    if args.durations:
        from kafka_replay.playing.shards import write_durations

        console.print(f"Durations: {write_durations(args.durations, args.directory)}")
        return code
    page = args.directory / REPORT_FILE if args.merge else write_html(args.directory)
    print(page)  # on stdout, whole: for scripts (`xdg-open "$(kafka-replay report out)"`)
    if args.png:
        try:
            rendering = screenshot(page, args.png)
        except BrowserMissing as exc:
            raise ValueError(str(exc)) from exc
        console.print(f"Picture: {rendering.png}")
    return code


def _merge(out: Path, shards: list[Path]) -> int:
    """Write ``out``'s report from the shards' and say it as ``run`` would; ``run``'s exit code."""
    from kafka_replay.report.catalog_report import (
        summary_lines,
        summary_rich_table,
        write_report,
        write_step_summary,
    )
    from kafka_replay.report.gate import exit_code
    from kafka_replay.report.junit import write_junit
    from kafka_replay.report.merge import merge_shards

    outcomes, context = merge_shards(shards, out)
    out_console = make_console(highlight=False, soft_wrap=True)  # as wide as its cells
    title = f"Incident replay: {len(shards)} shards merged"
    out_console.print(summary_rich_table(outcomes, title), soft_wrap=False)
    for line in summary_lines(outcomes):
        out_console.print(line, markup=False)
    console.print(f"Report: {write_report(out, outcomes, context)}")
    console.print(f"JUnit: {write_junit(out / 'junit.xml', outcomes)}")
    write_step_summary(outcomes)
    return exit_code(outcomes, bool(context["settings"].get("allow_not_applicable")))


def _merge_explorations(out: Path, shards: list[Path]) -> int:
    """Write ``out``'s exploration report from the shards' of ``explore --shard K/N`` and say
    it as ``explore`` would; ``explore``'s exit code."""
    from kafka_replay.exploring.findings import last_line, write_report
    from kafka_replay.exploring.record import merge_explorations

    result, budget_s, spent_s = merge_explorations(shards, out)
    result.report = write_report(result, budget_s, out, spent_s)
    console.print(last_line(result), markup=False, highlight=False)
    return 1 if result.findings or result.regressions else 0
