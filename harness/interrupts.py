"""Ctrl-C that arrives inside a C extension's callback comes back wrapped in another error, or
not at all."""

from __future__ import annotations

import signal
import threading
from types import FrameType

#: Set once SIGINT or SIGTERM came to a process that :func:`stop_on_signals` set up.
_received = threading.Event()


def stop_on_signals() -> None:
    """Make SIGINT (Ctrl-C) and SIGTERM raise ``KeyboardInterrupt``, so the ``finally`` blocks
    stop what the run started in order, and remember that one came.

    Remembered, because a ``KeyboardInterrupt`` raised in a callback of librdkafka's Python
    client can be swallowed: ``poll`` then fails with ``SystemError: ... returned NULL without
    setting an exception``, nothing attached, and only the memory of the signal tells that the
    error means "stop" (:func:`interrupted`).
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        _received.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def interrupted(exc: BaseException) -> bool:
    """True when ``exc`` is, or was caused by, a Ctrl-C (or SIGTERM turned into one), or came
    after one (:func:`stop_on_signals`).

    A signal handler that raises while librdkafka runs Python code (a log or delivery callback)
    makes CPython report ``SystemError: ... returned a result with an exception set`` with the
    ``KeyboardInterrupt`` as its cause; such an error means "stop", not "the run broke".
    """
    if _received.is_set():
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
