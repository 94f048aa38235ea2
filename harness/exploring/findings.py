"""The exploration's report: each finding with its shrunk schedule's timeline, what was tried,
and the time spent (``explore.md`` and ``explore.html`` beside the written definitions)."""

from __future__ import annotations

import html
import time
from collections import Counter
from pathlib import Path

from .explorer import REPLAYS, Exploration
from .record import write_record


def covered(result: Exploration) -> str:
    """What the service held under, by what the schedules were aimed at: ``held under 12
    schedule(s): 1 without faults, 3 aimed at commit ahead of writes, 8 at random``."""
    first: dict[str, str] = {}
    broke = set()
    for tried in result.tried:
        if tried.service == "yours" and not tried.error:
            aim = tried.aim or ("random" if tried.faults else "")
            first.setdefault(tried.schedule, aim)
            if tried.kinds:
                broke.add(tried.schedule)
    held = Counter(aim for name, aim in first.items() if name not in broke)
    aimed = [f"{n} at {aim}" for aim, n in held.items() if aim not in ("", "random")]
    if aimed:
        aimed[0] = aimed[0].replace(" at ", " aimed at ", 1)
    parts = [f"{held['']} without faults"] if held[""] else []
    parts += aimed + ([f"{held['random']} at random"] if held["random"] else [])
    return f"held under {sum(held.values())} schedule(s)" + (
        ": " + ", ".join(parts) if parts else ""
    )


def last_line(result: Exploration) -> str:
    """What an exploration ends with: the corpus replayed, schedules, plays, findings, what
    the service held under, and where the report is."""
    kept = (
        f"{len(result.regressions)} of the corpus's {len(result.corpus)} reproduced; "
        if result.corpus
        else ""
    )
    return (
        f"{kept}{result.schedules} schedule(s), {len(result.tried)} play(s), "
        f"{len(result.findings)} finding(s); {covered(result)}; report: {result.report}"
    )


def report_lines(result: Exploration, budget_s: float, spent_s: float | None = None) -> list[str]:
    """The report's Markdown; ``spent_s``: the seconds it took (default: since it started)."""
    spent = time.monotonic() - result.started if spent_s is None else spent_s
    plays = len(result.tried)
    windows = ", ".join(f"{kind} x{n}" for kind, n in result.windows.items()) or "none"
    lines = [
        f"# Exploration, seed {result.seed}",
        "",
        f"{result.schedules} schedule(s), {plays} play(s), {spent:.0f} s of a "
        f"{budget_s:.0f} s budget; {len(result.findings)} finding(s); {covered(result)}.",
        "",
        *_part(result.shard),
        *(
            [
                f"Search: aimed at the windows of exposure of a play without faults ({windows}), "
                "then at random.",
                "",
            ]
            if result.search == "aimed"
            else ["Search: at random.", ""]
        ),
    ]
    for finding in result.findings:
        lines += [
            f"## {finding.kind}: `{finding.path.name}`",
            "",
            f"Schedule {finding.drawn.index} with {len(finding.drawn.faults)} fault(s), broke the "
            + (
                f"service in {REPLAYS} of {REPLAYS} plays"
                if finding.drawn_broke == REPLAYS
                else f"service in {finding.drawn_broke} of {REPLAYS} plays; the fault aimed at "
                f"the window its break showed broke it in {REPLAYS} of {REPLAYS}"
            )
            + f", shrunk to {len(finding.shrunk.faults)}"
            + (
                f" before shrinking was done ({finding.cut_short}: explore again with a larger "
                "budget to shrink it further):"
                if finding.cut_short
                else ":"
            ),
            "",
            *(f"1. {step}" for step in finding.shrunk.timeline()),
            "",
            *_stalled(finding.stalled),
            f"Replay it: `kafka-replay run --incidents {finding.path.parent} {finding.path.stem}`",
            "",
        ]
    if result.corpus:
        lines += [
            "## The corpus, replayed first",
            "",
            *(f"- `{path.name}`: {said}" for path, said in result.corpus),
            "",
        ]
    if result.intermittent:
        lines += [
            f"## Intermittent (broke the service in fewer than {REPLAYS} of {REPLAYS} plays: "
            "not written as drawn)",
            "",
            *(
                f"- {i.schedule}: {i.kind} in {i.broke} of {i.plays} plays; "
                + "; ".join(i.timeline)
                + (
                    f". Aimed at the window its break showed ({'; '.join(i.explained)}), it broke "
                    f"the service in {REPLAYS} of {REPLAYS}: written as that"
                    if i.explained
                    else ""
                )
                for i in result.intermittent
            ),
            "",
        ]
    if result.apart:
        lines += [
            "## Reported apart (the reference service broke too)",
            "",
            *(f"- {name}" for name in result.apart),
            "",
        ]
    lines += [
        "## Plays",
        "",
        "| schedule | faults | aimed at | service | found | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for tried in result.tried:
        found = ", ".join(tried.kinds) or (f"did not play: {tried.error}" if tried.error else "-")
        lines.append(
            f"| {tried.schedule} | {tried.faults} | {tried.aim or '-'} | {tried.service} | "
            f"{found} | {tried.seconds} |"
        )
    return lines


def _part(shard: str) -> list[str]:
    """Which part of the seed's schedules the report covers: all, one shard, or shards joined."""
    if shard == "1/1":
        return []
    if "/" in shard:
        return [f"Shard {shard} of the seed's schedules.", ""]
    return [f"Joined from {shard}, each given the budget.", ""]


def _stalled(account: list[str]) -> list[str]:
    """A hang's account: what the service was doing when it stopped."""
    if not account:
        return []
    return ["What the service was doing when it stopped:", "", *(f"- {a}" for a in account), ""]


def html_page(lines: list[str]) -> str:
    """The report's Markdown as a page of its own: headings, lists, the plays' table."""
    body = []
    for line in lines:
        text = _inline(line)
        if line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
        elif line.startswith(("1. ", "- ")):
            body.append(f"<li>{_inline(line[line.index(' ') + 1 :])}</li>")
        elif line.startswith("|---"):
            continue
        elif line.startswith("|"):
            cells = [_inline(cell.strip()) for cell in line.strip("|").split("|")]
            body.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
        elif line:
            body.append(f"<p>{text}</p>")
    return (
        "<!doctype html><meta charset=utf-8><title>Exploration</title><style>body{font-family:"
        "sans-serif;max-width:70em;margin:2em auto}td{border-bottom:1px solid #ddd;padding:"
        "2px 8px}code{background:#f4f4f4}</style>" + "\n".join(_grouped(body))
    )


def _inline(text: str) -> str:
    """``code`` spans, the rest escaped."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _grouped(body: list[str]) -> list[str]:
    """List items in a list, table rows in a table."""
    out: list[str] = []
    for element in body:
        kind = "ul" if element.startswith("<li>") else "table" if element.startswith("<tr>") else ""
        last = out[-1] if out else ""
        if kind and last.startswith(f"<{kind}>"):
            out[-1] = last[: -len(f"</{kind}>")] + element + f"</{kind}>"
        else:
            out.append(f"<{kind}>{element}</{kind}>" if kind else element)
    return out


def write_report(
    result: Exploration, budget_s: float, out_dir: Path, spent_s: float | None = None
) -> Path:
    """``explore.md``, ``explore.html`` and ``explore.json`` (:mod:`.record`) in ``out_dir``;
    the markdown's path. ``spent_s``: the seconds it took (default: since it started)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_record(result, budget_s, out_dir, spent_s)
    lines = report_lines(result, budget_s, spent_s)
    markdown = out_dir / "explore.md"
    markdown.write_text("\n".join(lines) + "\n")
    (out_dir / "explore.html").write_text(html_page(lines))
    return markdown
