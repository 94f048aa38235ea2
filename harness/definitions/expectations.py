"""``[expect]``: what a correct service makes of each input, read and checked.

A service may dead-letter the inputs it cannot handle, drop some by design, or give several
kinds of result per input. Every name here is checked before a broker starts: a topic that is
not the incident's, a predicate that does not import, a fan-out without kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .model import Expectations, FanOut
from .table import Table


def read_expectations(
    top: Table, names: Mapping[str, str], roles: Mapping[str, str]
) -> Expectations:
    """``[expect]`` of a definition whose topics (every usable name, and each topic's role)
    are known; without the table, the first dead-letter topic (if any) takes the bad inputs."""
    dead_letters = [name for name, role in roles.items() if role == "dead_letter"]
    if "expect" not in top.data:
        return Expectations(dead_letter=dead_letters[0] if dead_letters else None)
    table = top.table("expect")
    dead_letter = table.get("dead_letter", str, dead_letters[0] if dead_letters else None)
    if dead_letter is not None and roles.get(names.get(dead_letter, "")) != "dead_letter":
        having = ", ".join(dead_letters) or 'none: give one [topics.NAME] role = "dead_letter"'
        raise table.fail(
            "dead_letter", f"{dead_letter!r} is not a dead-letter topic of this incident ({having})"
        )
    bad = _predicate(table, "bad")
    if bad is not None and dead_letter is None:
        raise table.fail("bad", "names inputs for a dead-letter topic; the incident has none")
    expectations = Expectations(
        dead_letter=None if dead_letter is None else names[dead_letter],
        bad=bad,
        filtered=_predicate(table, "filtered"),
        fan_out=_fan_out(table, names, roles) if "fan_out" in table.data else None,
    )
    table.finish()
    return expectations


def _predicate(table: Table, name: str) -> str | None:
    """A ``module:function`` that imports, over an input record (see ``workload.expect``)."""
    from kafka_replay.apps.contract import load_callable

    spec = table.get(name, str, None)
    if spec is not None:
        try:
            load_callable(spec)
        except ValueError as exc:
            raise table.fail(name, str(exc)) from None
    return spec


def _fan_out(table: Table, names: Mapping[str, str], roles: Mapping[str, str]) -> FanOut:
    """``[expect.fan_out]``: an output topic, its kinds, and the function telling them apart."""
    from kafka_replay.apps.contract import load_callable

    fan = table.table("fan_out")
    topic = fan.get("topic", str, "output")
    if roles.get(names.get(topic, "")) != "output":
        outputs = [name for name, role in roles.items() if role == "output"]
        raise fan.fail(
            "topic", f"{topic!r} is not an output topic of this incident ({', '.join(outputs)})"
        )
    kinds: Any = fan.get("kinds", list)
    if len(kinds) < 1 or not all(isinstance(k, str) and k for k in kinds):
        raise fan.fail("kinds", "must be a list of the kinds of output each input gives")
    if len(set(kinds)) != len(kinds):
        raise fan.fail("kinds", "names a kind twice")
    kind_of = fan.get("kind_of", str)
    try:
        load_callable(kind_of)
    except ValueError as exc:
        raise fan.fail("kind_of", str(exc)) from None
    fan.finish()
    return FanOut(names[topic], tuple(kinds), kind_of)
