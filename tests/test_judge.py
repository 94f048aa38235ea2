"""The pass/fail rule on every combination it distinguishes: pure logic, no broker.

Reference app or the user's app x vulnerable or remediated x signature seen or not x
guarantee held, broken or unknown x conditions met or not.
"""

from __future__ import annotations

import itertools

import pytest

from kafka_replay.definitions.model import Condition
from kafka_replay.judging.judge import judge, reproduced

SIGNATURE = (Condition("rejected_commits", ">=", 1), Condition("backlog_drained", "==", False))
CONDITIONS = (Condition("kills", ">=", 5),)
SEEN = {"rejected_commits": 7, "backlog_drained": False}
NOT_SEEN = {"rejected_commits": 0, "backlog_drained": True}
CHECKS = {
    "held": ("pass", "exactly-once", {}),
    "broken": ("fail", "lossy", {"lost": 3, "duplicate": 2}),
    "unknown": ("unknown", "unknown", {"unseen_at_deadline": 40}),
}


def expected(users_app: bool, profile: str, seen: bool, guarantee: str, met: bool) -> bool:
    """The rule, stated once more in the plainest words."""
    if not met:
        return False
    if not users_app:
        return seen if profile == "vulnerable" else (guarantee == "held" and not seen)
    if profile == "vulnerable":
        return guarantee == "held" and not seen
    return guarantee == "held"


CASES = list(
    itertools.product(
        [False, True], ["vulnerable", "remediated"], [True, False], list(CHECKS), [True, False]
    )
)


@pytest.mark.parametrize(
    ("users_app", "profile", "seen", "guarantee", "met"),
    CASES,
    ids=[
        f"{'user' if u else 'reference'}-{p}-{'seen' if s else 'unseen'}-{g}-"
        f"{'met' if m else 'unmet'}"
        for u, p, s, g, m in CASES
    ],
)
def test_every_rule(users_app: bool, profile: str, seen: bool, guarantee: str, met: bool) -> None:
    check, verdict, counts = CHECKS[guarantee]
    symptoms = {**(SEEN if seen else NOT_SEEN), "kills": 6 if met else 2}
    judgement = judge(
        profile=profile,
        users_app=users_app,
        signature=SIGNATURE,
        conditions=CONDITIONS,
        symptoms=symptoms,
        guarantee="at-least-once",
        check=check,
        verdict=verdict,
        counts=counts,
    )
    assert judgement.passed is expected(users_app, profile, seen, guarantee, met)
    assert judgement.reproduced is seen
    if not judgement.passed:
        assert judgement.reasons, "a failed run always says why"
    assert all(reason.strip() != "unknown" for reason in judgement.reasons)
    if not met:
        assert any(
            r.startswith("condition not met: kills >= 5 (measured 2)") for r in judgement.reasons
        )
    if guarantee == "unknown" and (users_app or profile == "remediated"):
        assert any("could not be judged: 40 acknowledged inputs" in r for r in judgement.reasons)
    if guarantee == "broken" and (users_app or profile == "remediated"):
        assert any("3 inputs lost, 2 inputs delivered twice" in r for r in judgement.reasons)


def test_a_users_vulnerable_app_is_a_finding_with_its_evidence() -> None:
    judgement = judge(
        profile="vulnerable",
        users_app=True,
        signature=SIGNATURE,
        conditions=(),
        symptoms=SEEN,
        guarantee="at-least-once",
        check="pass",
        verdict="at-least-once",
        counts={},
    )
    assert (judgement.passed, judgement.result) == (False, "vulnerable")
    assert judgement.reasons == [
        "your app is vulnerable to this incident: rejected_commits = 7; backlog_drained = false"
    ]


def test_results_name_what_happened() -> None:
    def result(users_app: bool, profile: str, symptoms: dict, check: str = "pass") -> str:
        return judge(
            profile=profile,
            users_app=users_app,
            signature=SIGNATURE,
            conditions=(),
            symptoms=symptoms,
            guarantee="exactly-once",
            check=check,
            verdict="x",
            counts={},
        ).result

    assert result(False, "vulnerable", SEEN) == "reproduced"
    assert result(False, "vulnerable", NOT_SEEN) == "not reproduced"
    assert result(False, "remediated", NOT_SEEN) == "cured"
    assert result(False, "remediated", SEEN) == "not cured"
    assert result(False, "remediated", NOT_SEEN, "fail") == "guarantee broken"
    assert result(True, "vulnerable", NOT_SEEN) == "not vulnerable"
    assert result(True, "remediated", SEEN) == "guarantee held"
    assert result(True, "remediated", NOT_SEEN, "unknown") == "guarantee not judged"


def test_the_signature_is_judged_on_what_could_be_measured() -> None:
    partly = {"rejected_commits": None, "backlog_drained": False}
    assert reproduced(SIGNATURE, partly) is True
    assert reproduced(SIGNATURE, {"rejected_commits": None, "backlog_drained": True}) is False
    assert reproduced(SIGNATURE, {"rejected_commits": None, "backlog_drained": None}) is None


def test_a_guarantee_not_judged_says_why_in_its_own_field() -> None:
    def judged(check: str, users_app: bool = True) -> str | None:
        return judge(
            profile="remediated",
            users_app=users_app,
            signature=SIGNATURE,
            conditions=(),
            symptoms=NOT_SEEN,
            guarantee="at-least-once",
            check=check,
            verdict="unknown" if check == "unknown" else "at-least-once",
            counts={"behind_open_transaction": 3},
        ).not_judged

    why = judged("unknown")
    assert why is not None and "could not be judged" in why and "3 acknowledged" in why
    assert judged("unknown", users_app=False) == why
    assert judged("pass") is None and judged("fail") is None
