"""The run record: what one replay of one incident under one profile came to, and in words.

It lives on the report side so that everything that reads or shows outcomes (reports, JUnit,
the HTML page, lanes handing outcomes back) does so without importing the replay engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any

#: A measured symptom: a number or a boolean, or None when the run could not tell.
Value = float | int | bool | None


@dataclass
class Outcome:
    incident: str
    profile: str
    app: str
    guarantee: str
    verdict: str
    passed: bool
    reproduced: bool | None
    anomalies: dict[str, int]
    symptoms: dict[str, Value]
    duration_s: float
    run_dir: str
    group_protocol: str = "classic"
    check: str = "unknown"  # the checker's pass, fail or unknown for the guarantee
    result: str = "not judged"  # reproduced, cured, vulnerable, guarantee broken, ...
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    failed_stage: str | None = None  # start-up, steps, settling, checker, symptoms or judgement
    #: For an instrumented app: the symptoms measured without its reports (they must agree).
    symptoms_outside: dict[str, Value] | None = None
    #: Seconds spent in each stage, in order: where a run's time went.
    stage_s: dict[str, float] = field(default_factory=dict)
    #: False when the cluster cannot give what the incident needs, or the incident does not
    #: test a team's app's clients (``reasons`` says which).
    applicable: bool = True
    #: Broker settings the cluster could not take and the run went without, with their need.
    settings_not_applied: dict[str, str] = field(default_factory=dict)
    #: Why the checker could not judge the declared guarantee (its ``unknown``: inputs still
    #: unseen, or behind a transaction still open); None when it was judged, or the run never
    #: got to the check (``failed_stage`` says where it stopped).
    not_judged: str | None = None
    #: Where results land in more than one place (a ``[sink]`` table, output topics, each kind
    #: of a fan-out, the dead-letter topic), each one's check by name (``table charges``,
    #: ``topic NAME``, ``topic NAME kind KIND``): ``verdict``, ``check`` and ``anomalies``;
    #: the worst one is the run's.
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: With a dead-letter topic (``[expect] dead_letter``): the inputs that belong there found
    #: there; None without one.
    dead_lettered: int | None = None
    #: A pipeline's services, each checked on its own (its inputs: what it reads), upstream
    #: first: ``verdict``, ``check`` and ``anomalies``; the run's gate is the end-to-end check.
    hops: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The first service of the pipeline whose check found records lost, misrouted, repeated
    #: or unexpected: where records first went wrong.
    first_wrong_hop: str | None = None
    #: Requests the brokers refused for a protocol version they do not serve, by ``API vN``
    #: (an app whose client is older than the brokers support); empty when none were.
    refused_versions: dict[str, int] = field(default_factory=dict)

    @property
    def gate(self) -> str:
        """``pass``, ``FAIL``, or ``n/a`` for a run that does not apply to the cluster."""
        if not self.applicable:
            return "n/a"
        return "pass" if self.passed else "FAIL"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "gate": self.gate}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        """The outcome ``to_json`` wrote, ignoring keys this version does not know (``gate``,
        or fields a newer version added), so older and newer reports both read."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def explain(self) -> str:
        said = {"n/a": "NOT APPLICABLE", "pass": "PASSED"}.get(self.gate, "FAILED")
        lines = [
            f"{self.incident} [{self.profile}] app {self.app}: "
            f"{said} ({self.result}) in {self.duration_s:.0f}s",
            f"  verdict {self.verdict} against declared {self.guarantee}: {self.check}"
            + ("" if self.dead_lettered is None else f", dead-lettered {self.dead_lettered}"),
            *(
                f"    {name}: {each['verdict']}, {each['check']}"
                for name, each in self.outputs.items()
            ),
            *(
                f"    service {name}: {each['verdict']}, {each['check']}"
                + (" <- records first went wrong here" if name == self.first_wrong_hop else "")
                for name, each in self.hops.items()
            ),
            f"  reproduced: {self.reproduced}",
            "  symptoms: " + ", ".join(f"{k}={v}" for k, v in self.symptoms.items()),
        ]
        lines += [f"  - {reason}" for reason in self.reasons]
        lines += [
            f"  - went without broker setting {key} ({need})"
            for key, need in self.settings_not_applied.items()
        ]
        if self.error:
            lines.append(f"  error in {self.failed_stage}: {self.error}")
        lines.append(f"  run directory: {self.run_dir}")
        return "\n".join(lines)


#: What each result says, for the lines under the summary table.
MEANINGS = {
    "reproduced (vulnerable)": "the definition's app under the incident's conditions showed "
    "every symptom of the signature: the incident replays",
    "cured (remediated)": "with the fix, the declared guarantee held and no symptom appeared",
    "not reproduced": "a symptom of the post's failure did not appear: the incident did not replay",
    "not cured": "with the fix, a symptom of the post's failure still appeared",
    "vulnerable": "your app showed the incident's symptoms under its conditions",
    "not vulnerable": "your app kept its guarantee and showed none of the incident's symptoms",
    "guarantee held": "your app kept its declared guarantee under the fixed conditions",
    "guarantee broken": "records were lost, or delivered more often than the app declares",
    "guarantee not judged": "acknowledged records were still unprocessed, or their output "
    "behind a transaction still open, when the run ended",
    "conditions not met": "the run did not create the conditions the incident needs",
    "not applicable": "the cluster cannot give what the incident needs, or the incident does "
    "not test your app's clients (the reason says which); "
    "neither a pass nor a failure",
}


def result_label(outcome: Outcome) -> str:
    """The result as a person reads it: a reproduced item says it was the vulnerable setup."""
    if outcome.result in ("reproduced", "cured"):
        return f"{outcome.result} ({outcome.profile})"
    return outcome.result


def meaning(label: str) -> str:
    if label.endswith(" failed"):
        return "the run broke before it could be judged (see the error)"
    return MEANINGS.get(label, "")


def delivered(outcome: Outcome) -> str:
    """What the checker measured (the app declares ``guarantee``)."""
    return "not judged" if outcome.verdict == "unknown" else outcome.verdict
