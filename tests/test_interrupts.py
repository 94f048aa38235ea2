"""A Ctrl-C wrapped by a C extension is still a Ctrl-C (pure logic, no broker)."""

from __future__ import annotations

from kafka_replay.interrupts import interrupted


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
