"""The pass/fail rule of a replay: from what was measured to a result a person can read.

A pure function of the measurements, so every rule is tested without Kafka:

- reference app, vulnerable profile: the run passes when the post's failure reproduced (every
  measurable symptom of the signature was seen);
- reference app, remediated profile: it passes when the declared guarantee held and no symptom
  of the signature appeared (the fix cured it);
- the user's app, vulnerable profile ("is my app vulnerable to this incident?"): it passes when
  the declared guarantee held and the signature was not reproduced; a reproduced signature is
  a finding, named with its evidence, and fails the gate;
- the user's app, remediated profile ("with the fix applied, does my guarantee hold?"): it
  passes when the declared guarantee held.

In every case the definition's ``conditions`` must hold, or the run did not test what it
claims. A symptom the run could not measure (``None``) neither proves nor disproves anything:
the signature is judged on what could be seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_replay.definitions.model import Condition


@dataclass(frozen=True)
class Judgement:
    passed: bool
    reproduced: bool | None  # None when no symptom of the signature could be measured
    result: str  # e.g. "reproduced", "cured", "vulnerable", "guarantee broken"
    reasons: list[str] = field(default_factory=list)
    #: Why the declared guarantee could not be judged (the checker said unknown), else None.
    not_judged: str | None = None


def reproduced(signature: Sequence[Condition], symptoms: Mapping[str, Any]) -> bool | None:
    """Whether every measurable symptom of the signature was seen (None: none measurable)."""
    held = [c.holds(symptoms.get(c.symptom)) for c in signature]
    measured = [h for h in held if h is not None]
    return all(measured) if measured else None


def guarantee_reason(
    guarantee: str,
    check: str,
    verdict: str,
    counts: Mapping[str, int],
    held_back: Sequence[str] = (),
) -> str:
    """Why the declared guarantee did not hold, or could not be judged, in plain words;
    ``held_back``: what the run's history shows held the app back from the inputs it did not
    get to (see :mod:`.held_back`), a clause each."""
    if check == "fail":
        parts = [
            f"{counts[name]} {label}"
            for name, label in (
                ("lost", "inputs lost"),
                ("misrouted", "inputs misrouted (where a correct service does not put them)"),
                ("duplicate", "inputs delivered twice"),
            )
            if counts.get(name)
        ]
        return f"the declared {guarantee} guarantee broke: {verdict} ({', '.join(parts)})"
    unseen = counts.get("unseen_at_deadline", 0)
    pending = counts.get("behind_open_transaction", 0)
    parts = []
    if unseen:
        parts.append(
            f"{unseen} acknowledged inputs were not in the output when the run ended and no "
            "commit had passed them (the app did not get to them in time)"
        )
        parts += held_back
    if pending:
        parts.append(
            f"{pending} acknowledged inputs have their output only behind a transaction that "
            "was still open when the run ended (neither delivered nor lost until it ends)"
        )
    return f"the declared {guarantee} guarantee could not be judged: " + "; ".join(parts)


def judge(
    *,
    profile: str,
    users_app: bool,
    signature: Sequence[Condition],
    conditions: Sequence[Condition],
    symptoms: Mapping[str, Any],
    guarantee: str,
    check: str,
    verdict: str,
    counts: Mapping[str, int],
    held_back: Sequence[str] = (),
) -> Judgement:
    """Judge one run; ``check`` is the checker's pass, fail or unknown for ``guarantee``;
    ``held_back``: what held the app back from the inputs it did not get to, if any."""
    shown = reproduced(signature, symptoms)
    reasons = [
        f"condition not met: {c} (measured {_shown(symptoms.get(c.symptom))})"
        for c in conditions
        if c.holds(symptoms.get(c.symptom)) is False
    ]
    conditions_met = not reasons
    held = check == "pass"
    seen = [c for c in signature if c.holds(symptoms.get(c.symptom)) is True]
    missing = [c for c in signature if c.holds(symptoms.get(c.symptom)) is not True]
    broken = [] if held else [guarantee_reason(guarantee, check, verdict, counts, held_back)]
    not_judged = broken[0] if check == "unknown" else None

    if not users_app and profile == "vulnerable":
        reasons += [
            f"symptom not observed: {c} (measured {_shown(symptoms.get(c.symptom))})"
            for c in missing
        ]
        passed = shown is True and conditions_met
        result = "reproduced" if passed else "not reproduced"
        return Judgement(passed, shown, result, reasons, not_judged)
    if not users_app:
        reasons += broken
        reasons += [f"symptom appeared: {c} (measured {symptoms[c.symptom]})" for c in seen]
        passed = held and not seen and conditions_met
        result = "cured" if passed else _failure(check, "not cured")
        return Judgement(passed, shown, result, reasons, not_judged)
    if profile == "vulnerable" and shown:
        evidence = "; ".join(f"{c.symptom} = {_shown(symptoms[c.symptom])}" for c in seen)
        reasons.append(f"your app is vulnerable to this incident: {evidence}")
    reasons += broken
    vulnerable = profile == "vulnerable" and bool(shown)
    passed = held and not vulnerable and conditions_met
    if passed:
        result = "not vulnerable" if profile == "vulnerable" else "guarantee held"
    elif vulnerable:
        result = "vulnerable"
    else:
        result = _failure(check, "conditions not met")
    return Judgement(passed, shown, result, reasons, not_judged)


def _failure(check: str, otherwise: str) -> str:
    return {"fail": "guarantee broken", "unknown": "guarantee not judged"}.get(check, otherwise)


def _shown(value: Any) -> str:
    if value is None:
        return "not measurable"
    return str(value).lower() if isinstance(value, bool) else str(value)
