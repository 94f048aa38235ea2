"""The log a leased server's starts append to, read back from where the latest start began.

A server started again (a fresh port, a new run in the same directory) appends to the same
file, so a failure must quote this start's lines, not an earlier start's. :func:`read_tail` is
the end of any log file, for the servers that write their own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from .process import spawn
from .reaper import Lease


def read_tail(path: Path, lines: int) -> str:
    """The last ``lines`` of the log file ``path``, for an error message."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


class ServerLog:
    """A server's log file; :meth:`begin` marks where a start's output begins."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def begin(self) -> None:
        """What comes next is this start's (the file keeps the earlier ones)."""
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def spawn(
        self,
        command: Sequence[str],
        lease: Lease,
        *,
        die_with_owner: bool = True,
        cwd: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """:func:`~.process.spawn` ``command`` writing to the log, after a ``$ command`` line
        saying what wrote what follows."""
        with self.path.open("ab") as output:
            output.write(f"$ {' '.join(command)}\n".encode())
            output.flush()
            return spawn(command, output, lease, die_with_owner=die_with_owner, cwd=cwd)

    def since_start(self) -> str:
        """What was written since :meth:`begin`; empty when the file cannot be read."""
        try:
            with self.path.open("rb") as log_file:
                log_file.seek(self.offset)
                return log_file.read().decode(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        """The last ``lines`` of this start's output, for an error message."""
        return "\n".join(self.since_start().splitlines()[-lines:]) or "(empty log)"

    def failure(self, headline: str) -> str:
        """An error message: ``headline`` (what went wrong), then the end of this start's log."""
        return f"{headline}; the end of its log {self.path}:\n{self.tail()}"
