"""What broke in a play: each kind a finding names, with the symptom its definition carries."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kafka_replay.definitions.definition import parse_condition
from kafka_replay.definitions.model import Condition
from kafka_replay.report.outcome import Outcome

#: What breaks a service, the worst first, with the symptom that says so in a definition.
KINDS: dict[str, tuple[str, str]] = {
    "lost": ("inputs_lost_in_worst_place", ">= 1"),
    "misrouted": ("inputs_misrouted", ">= 1"),
    "duplicated": ("reprocessed", ">= 1"),
    "reordered": ("reordered", ">= 1"),
    "not drained": ("backlog_drained", "== false"),
}


def kinds_of(outcome: Outcome, guarantee: str, ordered: bool) -> set[str]:
    """What a played run says broke: each kind whose finding's signature (``KINDS``) holds of
    the run's symptoms, so that a finding written from a play shows again when its definition
    is replayed. Lost, misrouted (not in the place ``[expect]`` gives them) or (under
    exactly-once) duplicated inputs, results out of their keys' order (when order is promised),
    a backlog never drained.

    Not a crash loop by itself: the supervisor counts the harness's own kills toward one, as a
    deployment counts every exit, so drawn kills make one of any service, the reference's too.
    A service that loops on its own leaves its backlog undrained, which is the finding."""
    return {
        kind
        for kind in KINDS
        if (kind != "duplicated" or guarantee == "exactly-once")
        and (kind != "reordered" or ordered)
        and _condition(kind).holds(outcome.symptoms.get(KINDS[kind][0])) is True
    }


@cache
def _condition(kind: str) -> Condition:
    symptom, text = KINDS[kind]
    return parse_condition(Path(__file__), f"KINDS[{kind!r}]", symptom, text, {symptom})
