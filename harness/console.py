"""Where the commands write what a person reads: a terminal, or a file or a pipe (a CI log).

A terminal may wrap a long line at its width, as it would anyway. A file or a pipe gets every
line whole, whatever ``$COLUMNS`` or the terminal the command was started from says: such a log
is read and searched line by line, and a line cut at 80 columns (``queued 0`` on one line,
``s)`` on the next) reads as two. Rich wraps at its console's width, 80 columns off a terminal,
so every console of the commands, and their logs and tracebacks, are made here.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from rich.console import Console
from rich.logging import RichHandler

#: The width of a file or a pipe: more than any table the commands print, so that a table is as
#: wide as its cells; lines of text are never cut there, whatever their length (soft wrap).
UNWRAPPED_WIDTH = 10_000


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    """A rich console on stdout (``stderr``: on stderr) that wraps lines only on a terminal."""
    made = Console(stderr=stderr, **options)
    if not on_terminal(made):
        made.soft_wrap = True
        made.width = UNWRAPPED_WIDTH
    return made


def on_terminal(console: Console) -> bool:
    """Whether ``console`` writes to a terminal, asked of its stream itself: ``$FORCE_COLOR``
    makes rich treat a CI log as a terminal, and colour there is welcome, a cut line is not."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def log_handler(console: Console) -> logging.Handler:
    """The harness's logs on ``console``: rich's columns on a terminal, whole lines elsewhere
    (rich's log columns wrap each message at the console's width)."""
    if on_terminal(console):
        return RichHandler(console=console, show_path=False)
    handler = logging.StreamHandler(console.file)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)-8s %(message)s", "%X"))
    return handler


def print_exception(console: Console) -> None:
    """The exception being handled: rich's framed traceback on a terminal, Python's own lines
    elsewhere (rich's frame cuts each line at the console's width)."""
    if on_terminal(console):
        console.print_exception()
    else:
        console.print(traceback.format_exc().rstrip(), markup=False, highlight=False)
