"""What a service was doing when it stopped draining: the account a hang (``not drained``) is
reported with, from what its play already recorded (the judge's account of what held the
service back, the instances that ignored SIGTERM, each instance's last words), so that a reader
of the exploration's report sees the hang without opening the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_replay.report.outcome import Outcome

#: Lines of each instance's log that the account quotes.
LOG_LINES = 3


def stall_account(outcome: Outcome) -> list[str]:
    """One line per thing the play shows of a service that stopped draining."""
    run = Path(outcome.run_dir)
    lines = []
    if outcome.not_judged:
        lines.append(outcome.not_judged)
    elif outcome.symptoms.get("backlog_drained") is False:
        lines.append("the backlog was not drained within the drain's budget")
    looping: dict[Any, Any] = {}  # each instance's longest crash loop
    for event in _events(run / "events" / "lifecycle.jsonl"):
        if event.get("kind") == "killed_after_grace":
            lines.append(
                f"instance {event.get('instance')} ignored SIGTERM for {event.get('grace_s')} s "
                "at the run's end and was killed (SIGKILL): it was stuck, not stopping"
            )
        elif event.get("kind") == "crash_loop":
            looping[event.get("instance")] = event.get("short_lives")
    for instance, lives in looping.items():
        lines.append(f"instance {instance} was in a crash loop ({lives} short lives in a row)")
    for log in sorted((run / "logs").glob("app-*.log")):
        last = _last_lines(log)
        if last:
            lines.append(f"{log.stem}'s last lines: " + " | ".join(last))
    return lines


def _events(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a kill
    return events


def _last_lines(log: Path) -> list[str]:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    return [line.strip()[:200] for line in text.splitlines() if line.strip()][-LOG_LINES:]
