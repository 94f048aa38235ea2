"""Waiting for a condition: the one loop every wait of the harness (and of its tests) goes
through, so that a wait always ends (a deadline, or a stop asked for) and a time-out always says
what was awaited, with the end of a log where one helps.

A condition answers ``None`` (or ``False``) while the thing awaited has not happened, and
anything else once it has (``0`` too: a partition, a count); it may raise to end the wait at
once (a server that exited while it was awaited).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _not_yet(answer: object) -> bool:
    return answer is None or answer is False


def poll(
    condition: Callable[[], T | None],
    timeout_s: float,
    *,
    every_s: float = 0.1,
    stop: threading.Event | None = None,
) -> T | None:
    """``condition()``'s first answer, asked every ``every_s`` seconds until ``timeout_s`` has
    passed (asked at least once); None when it had none by then, or ``stop`` was set."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = condition()
        if not _not_yet(answer):
            return answer
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        pause = min(every_s, left)
        if stop is not None:
            if stop.wait(pause):
                return None
        elif pause > 0:
            time.sleep(pause)


def wait_for(
    condition: Callable[[], T | None],
    timeout_s: float,
    what: str | Callable[[], str],
    *,
    every_s: float = 0.1,
    tail: Callable[[], str] | None = None,
    error: Callable[[str], BaseException] = TimeoutError,
) -> T:
    """``condition()``'s first answer; when ``timeout_s`` passes first, ``error`` is raised with
    ``what`` (the sentence saying what did not happen; a function, to say it as things stand
    then) and, below it, ``tail()`` (the end of a log)."""
    answer = poll(condition, timeout_s, every_s=every_s)
    if not _not_yet(answer):
        return answer  # type: ignore[return-value]
    message = what() if callable(what) else what
    if tail is not None:
        message += ":\n" + tail()
    raise error(message)
