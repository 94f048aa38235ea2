"""What the commands print for a person is never wrapped in a file or a pipe (a CI log is read
by line): through the real command line, and the consoles it is printed with."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.table import Table

from kafka_replay.console import log_handler, make_console
from tests.test_catalog_definitions import VALID, write

#: Longer than any terminal's 80 columns, on one line of each run's explanation and summary.
REASON = (
    "the workload producer, whose acknowledgements a team's app never sees, so that this reason "
    "alone is far wider than eighty columns"
)
NAMES = ("an-incident-with-a-long-name", "another-incident-with-a-long-name")


def test_progress_lines_through_a_pipe_are_whole(tmp_path: Path) -> None:
    """``run --jobs 2`` (the lanes' outcomes relayed by the parent, as ``./dev main`` prints
    them) of two incidents that do not apply to an app: quick, and on the shared path."""
    mine = f'\n[your_app]\ntests = "{REASON}"\napplies = false\n'
    for name in NAMES:
        write(tmp_path, VALID + mine, name)
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", *NAMES, "--incidents", str(tmp_path),
         "--app", f"{sys.executable} -c pass", "--jobs", "2", "--allow-not-applicable"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "40", "KAFKA_REPLAY_LANE_OVERLAP": "0"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    outcome = re.compile(r"^n/a (\S+) \[(vulnerable|remediated)\] in \d+s \(start-up \d+ s, .*\)$")
    shown = [m.groups() for m in map(outcome.match, result.stderr.splitlines()) if m]
    assert sorted(shown) == sorted((n, p) for n in NAMES for p in ("vulnerable", "remediated")), (
        result.stderr
    )
    for output in (result.stderr, result.stdout):  # each run's explanation; the summary's lines
        whole = [line for line in output.splitlines() if REASON in line]
        assert len(whole) == 4, output
    table = [line for line in result.stdout.splitlines() if line.startswith("│ ")]
    assert len(table) == 4 and all(line.endswith("│") for line in table), result.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_console_wraps_on_a_terminal_only() -> None:
    line = "word " * 60
    piped, terminal = io.StringIO(), _Terminal()
    make_console(file=piped).print(line)
    make_console(file=terminal, width=40).print(line)
    assert piped.getvalue().count("\n") == 1
    assert terminal.getvalue().count("\n") > 1  # a terminal may wrap: its reader sees its width
    table = Table("incident", "why")
    table.add_row("zombie-commit", "x" * 150)
    make_console(file=piped).print(table, soft_wrap=False)
    assert any(line.endswith("x" * 150 + " │") for line in piped.getvalue().splitlines())


def test_the_logs_in_a_file_are_whole_lines() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("kafka_replay.test_console")
    handler = log_handler(make_console(file=stream))
    logger.addHandler(handler)
    try:
        logger.warning("%s", " ".join(["slow"] * 40))
    finally:
        logger.removeHandler(handler)
    (logged,) = stream.getvalue().splitlines()
    assert logged.endswith("WARNING  " + " ".join(["slow"] * 40))
