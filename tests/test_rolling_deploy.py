"""Rolling deploys: eager revocations told from cooperative ones on hand-made app reports."""

from __future__ import annotations

from typing import Any

from kafka_replay.judging.symptoms import measure
from tests.test_symptoms import TOPIC, evidence

NAME = ("whole_assignment_revocations",)


def rebalance(ts: float, kind: str, member: str, *partitions: int) -> dict[str, Any]:
    spans = [{"topic": TOPIC, "partition": p} for p in partitions]
    return {"ts": ts, "kind": kind, "member": member, "partitions": spans}


def test_eager_rebalances_revoke_every_member_whole_and_cooperative_ones_do_not() -> None:
    eager = [
        rebalance(1, "assigned", "a", 0, 1), rebalance(1, "assigned", "b", 2, 3),
        rebalance(2, "revoked", "a", 0, 1), rebalance(2, "revoked", "b", 2, 3),  # b stops
        rebalance(3, "assigned", "a", 0, 1, 2, 3),
        rebalance(4, "revoked", "a", 0, 1, 2, 3), rebalance(4.1, "assigned", "a", 0, 1),
        rebalance(4.1, "assigned", "c", 2, 3),
    ]  # fmt: skip
    assert measure(evidence(app=eager), NAME) == {NAME[0]: 2}
    cooperative = [
        rebalance(1, "assigned", "a", 0, 1), rebalance(1, "assigned", "b", 2, 3),
        rebalance(2, "revoked", "b", 2, 3),  # b leaves: its own revocation, never assigned again
        rebalance(2.1, "assigned", "a", 2, 3),
        rebalance(3, "revoked", "a", 3), rebalance(3, "assigned", "a"),  # one moves to c
        rebalance(3.1, "assigned", "c", 3),
    ]  # fmt: skip
    assert measure(evidence(app=cooperative), NAME) == {NAME[0]: 0}


def test_eager_revocations_are_unmeasured_without_the_apps_reports() -> None:
    assert measure(evidence(), NAME) == {NAME[0]: None}
