"""A Ctrl-C wrapped by a C extension, or swallowed by one, is still a Ctrl-C (no broker)."""

from __future__ import annotations

import signal

import pytest

from kafka_replay import interrupts
from kafka_replay.interrupts import interrupted, stop_on_signals


def _wrapped(*, cause: bool) -> Exception:
    """The error CPython raises when a signal handler raised inside a C call."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            if cause:
                raise SystemError("returned a result with an exception set") from inner
            raise RuntimeError("raised while handling it")  # noqa: B904 (the context is the test)
    except Exception as exc:
        return exc
    raise AssertionError("unreachable")


def test_a_ctrl_c_as_the_cause_is_an_interrupt() -> None:
    assert interrupted(_wrapped(cause=True))


def test_a_ctrl_c_as_the_context_is_an_interrupt() -> None:
    assert interrupted(_wrapped(cause=False))


def test_an_ordinary_error_is_not() -> None:
    try:
        try:
            raise ValueError("first")
        except ValueError as first:
            raise RuntimeError("second") from first
    except RuntimeError as exc:
        assert not interrupted(exc)


def test_a_cycle_in_the_chain_ends() -> None:
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert not interrupted(first)


def test_an_error_after_a_ctrl_c_is_an_interrupt() -> None:
    """librdkafka's client can swallow the KeyboardInterrupt a callback raised and fail with
    nothing attached: the signal itself is remembered."""
    swallowed = SystemError("<method 'poll' of 'cimpl.Producer' objects> returned NULL")
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        stop_on_signals()
        assert not interrupted(swallowed)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert interrupted(swallowed)
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
        interrupts._received.clear()
