"""From anomaly counts to a verdict, and from a verdict to pass, fail or unknown.

The counts judge the app, so they leave out what the brokers did: when the input log was
read, a write it lost counts as ``lost_write`` (not lost or unseen) and an input it holds
twice may be delivered twice; an input retention deleted before the group passed it counts as
``deleted_by_retention`` (see :mod:`kafka_replay.checker.anomalies`).
"""

from __future__ import annotations

GUARANTEES = ("exactly-once", "at-least-once")


def verdict(lost: int, duplicated: int, unseen: int) -> str:
    """What the run delivered: loss decides first, then what is still unseen, then duplicates."""
    if lost:
        return "lossy" if duplicated else "at-most-once"
    if unseen:
        return "unknown"
    return "at-least-once" if duplicated else "exactly-once"


def guarantee_result(guarantee: str, lost: int, duplicated: int, unseen: int) -> str:
    """``pass``, ``fail`` or ``unknown`` for the guarantee the app declares.

    A loss fails both guarantees, a duplicate fails exactly-once, whatever is still unseen;
    otherwise inputs not yet delivered make the outcome unknown.
    """
    if guarantee not in GUARANTEES:
        raise ValueError(f"guarantee {guarantee!r} is not one of {', '.join(GUARANTEES)}")
    if lost or (duplicated and guarantee == "exactly-once"):
        return "fail"
    return "unknown" if unseen else "pass"
