"""Ctrl-C that arrives inside a C extension's callback comes back wrapped in another error."""

from __future__ import annotations


def interrupted(exc: BaseException) -> bool:
    """True when ``exc`` is, or was caused by, a Ctrl-C (or SIGTERM turned into one).

    A signal handler that raises while librdkafka runs Python code (a log or delivery callback)
    makes CPython report ``SystemError: ... returned a result with an exception set`` with the
    ``KeyboardInterrupt`` as its cause; such an error means "stop", not "the run broke".
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
