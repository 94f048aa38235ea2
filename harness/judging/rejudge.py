"""A stored run judged again: its symptoms measured from its history and the pass/fail rule
applied over them and the checks it recorded, with no cluster and no Spark.

What a change of the judging code does to runs already played: their outcomes again, to set
beside the ``outcome.json`` each run wrote. The checks themselves are analysed again from their
recorded inputs (:mod:`kafka_replay.checker.recorded_checks`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kafka_replay.checker import CheckResult
from kafka_replay.definitions.model import Incident
from kafka_replay.history import RunHistory
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.history.store import (
    CHECK,
    DELIVERIES,
    HOP_CHECKS,
    PLACE_CHECKS,
    SIDE_EFFECTS_CHECK,
    read_stream,
)
from kafka_replay.report.outcome import Outcome

from .evidence import Evidence
from .places import worst
from .played import measured, rule

#: What judging writes into an outcome, measured again from the stored run (the rest of the
#: outcome, its timings included, is as the run wrote it).
JUDGED = ("symptoms", "symptoms_outside", "passed", "reproduced", "result", "not_judged")


@dataclasses.dataclass(frozen=True)
class StoredChecks:
    """A stored run's checks: the one the symptoms read, the one the gate takes, and the side
    effects' where there is one."""

    read: CheckResult
    judged: CheckResult
    side_effects: CheckResult | None

    @classmethod
    def of(cls, root: Path) -> StoredChecks:
        def result(data: dict) -> CheckResult:
            return CheckResult.from_json(data)

        places = root / PLACE_CHECKS
        if places.exists():
            outputs = {name: result(c) for name, c in json.loads(places.read_text()).items()}
        else:
            outputs = {"output": result(json.loads((root / CHECK).read_text()))}
        read = next(iter(outputs.values()))
        checks = dict(outputs)
        hops_file = root / HOP_CHECKS
        if hops_file.exists():
            hops = {
                name: {place: result(c) for place, c in hop["places"].items()}
                for name, hop in json.loads(hops_file.read_text()).items()
            }
            read = next(iter(hops[list(hops)[-1]].values()))  # the last service's consumption
            checks |= {f"{n}: {p}": c for n, found in hops.items() for p, c in found.items()}
        read = dataclasses.replace(read, deliveries=read_stream(root / DELIVERIES))
        side = root / SIDE_EFFECTS_CHECK
        side_effects = result(json.loads(side.read_text())) if side.exists() else None
        return cls(read, worst(checks), side_effects)


def rejudge(root: Path, incident: Incident) -> Outcome:
    """The outcome of the run stored at ``root`` (a run of ``incident``), judged again.

    Judging's own fields (:data:`JUDGED`) are measured anew; the reasons are the run's up to
    the judgement's, then the judgement's anew (a share group's archived inputs' among them).
    """
    stored = Outcome.from_json(json.loads((root / "outcome.json").read_text()))
    history = RunHistory.existing(root)
    meta = history.meta()
    settings = meta.get("settings", {})
    users_app = bool(settings.get("app") or settings.get("app_image"))
    if users_app:
        incident = incident.for_your_app()
    checks = StoredChecks.of(root)
    evidence = Evidence.of(
        RecordedRun.read(root, outputs=False),
        checks.read,
        checks.side_effects,
        _events(history, "group"),
        _events(history, "replicas"),
        _events(history, "refused"),
        checks.judged,
    )
    outcome = dataclasses.replace(stored, **dict.fromkeys(JUDGED), reasons=[])
    broker = meta.get("broker_config", {})  # the profile's, with --broker-config over it
    symptoms = measured(evidence, incident)
    guarantee, profile = stored.guarantee, stored.profile
    rule(symptoms, incident, profile, guarantee, users_app, checks.judged, broker).into(outcome)
    judged = outcome.reasons
    before = stored.reasons[: max(len(stored.reasons) - len(judged), 0)]
    outcome.reasons = [*before, *judged]
    return outcome


def _events(history: RunHistory, name: str) -> list[dict] | None:
    """A stream the brokers' logs were read into, or None where there were none to read."""
    return history.read(name) if history.stream_path(name).exists() else None
