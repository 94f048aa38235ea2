"""The evidence a symptom is measured from: a finished run's streams, loaded once.

:class:`Evidence` holds a run's history streams, the brokers' group and replica events and the
checker's results; every symptom module reads it, and the runner builds it once per run (and
once more without the app's reports, to measure what any app would show). The two readings
every subject shares live here too: whether the app sent reports, and which instance a
lifecycle event is of.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_replay.history import derived
from kafka_replay.history.recorded import RecordedRun

if TYPE_CHECKING:
    from kafka_replay.checker import CheckResult


@dataclass
class Evidence:
    """Everything a symptom may look at, loaded once per run."""

    produce: list[dict[str, Any]]
    lifecycle: list[dict[str, Any]]
    app: list[dict[str, Any]]  # every instance's report, in time order
    offsets: list[dict[str, Any]]
    lag: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    check: CheckResult
    side_effects: CheckResult | None = None
    input_topic: str = ""
    client_config: dict[str, Any] = field(default_factory=dict)
    #: The coordinators' events for the run's group (None: no broker logs, e.g. external).
    group: list[dict[str, Any]] | None = None
    #: Every output record matched to its input, in output time order (from the checker).
    deliveries: list[dict[str, Any]] = field(default_factory=list)
    #: The output partitions' last stable offsets and high watermarks, sampled.
    stable: list[dict[str, Any]] = field(default_factory=list)
    #: What the run found of open transactions before the check (the ``settled`` event).
    transactions: list[dict[str, Any]] = field(default_factory=list)
    #: When the run started (Unix seconds): the clock a reader's times count from.
    start: float = 0.0
    #: The partition leaders' events for the run's output topics (None: no broker logs).
    replicas: list[dict[str, Any]] | None = None
    #: The requests the brokers refused for a protocol version they do not serve (None: no
    #: broker logs).
    refused: list[dict[str, Any]] | None = None
    #: The worst place's check, where results land in several (a dead-letter topic beside the
    #: output): what the gate judged, and where an input missing from its place is counted;
    #: ``check`` is the first place's, the one the consumption symptoms follow. None: ``check``.
    judged: CheckResult | None = None

    @property
    def worst(self) -> CheckResult:
        """The check the gate judged (see ``judged``)."""
        return self.judged if self.judged is not None else self.check

    @classmethod
    def of(
        cls,
        recorded: RecordedRun,
        check: CheckResult,
        side_effects: CheckResult | None = None,
        group: list[dict[str, Any]] | None = None,
        replicas: list[dict[str, Any]] | None = None,
        refused: list[dict[str, Any]] | None = None,
        judged: CheckResult | None = None,
    ) -> Evidence:
        """The evidence of a run read by :class:`RecordedRun`, beside the checker's results
        (held in memory) and the group's events (None: no broker logs to read them from)."""

        def stream(name: str) -> list[dict[str, Any]]:
            return recorded.stream(name) or []

        return cls(
            produce=stream("produce"),
            lifecycle=stream("lifecycle"),
            app=recorded.app or [],
            offsets=stream("offsets"),
            lag=stream("lag"),
            steps=stream("steps"),
            check=check,
            judged=judged,
            side_effects=side_effects,
            input_topic=recorded.input_topic or "",
            client_config=recorded.meta.get("client_config", {}),
            group=group,
            deliveries=check.deliveries,
            stable=stream("stable"),
            transactions=stream("transactions"),
            start=recorded.start,
            replicas=replicas,
            refused=refused,
        )

    def without_reports(self) -> Evidence:
        """The same run as an app that reports nothing would leave it."""
        return dataclasses.replace(self, app=[])

    @property
    def acks(self) -> list[dict[str, Any]]:
        return [e for e in self.produce if e["kind"] == "ack"]

    def app_events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.app if e["kind"] == kind]

    def group_events(self, kind: str) -> list[dict[str, Any]] | None:
        """The coordinators' events of ``kind`` for the run's group; None: no broker logs."""
        return None if self.group is None else [e for e in self.group if e["kind"] == kind]

    def replica_events(self, kind: str) -> list[dict[str, Any]] | None:
        """The partition leaders' events of ``kind``; None: no broker logs."""
        return None if self.replicas is None else [e for e in self.replicas if e["kind"] == kind]

    def step_windows(self, do: str, label: str | None = None) -> list[tuple[float, float]]:
        return [
            (e["started"], e["ended"])
            for e in self.steps
            if e["do"] == do and (label is None or e.get("label") == label)
        ]

    def consumed_spans(self) -> list[tuple[float, dict[str, Any]]]:
        """(time, span) for each batch the app took from an input partition.

        From the app's ``consumed`` reports where it sends them; otherwise from the output
        (see :func:`kafka_replay.history.derived.consumed_spans`).
        """
        return derived.consumed_spans(self.app, self.deliveries, self.input_topic)


def has_reports(evidence: Evidence) -> bool:
    """Whether the app sent its own reports (an instrumented app), which some symptoms need."""
    return bool(evidence.app)


def instance_of(event: dict[str, Any]) -> tuple[str | None, int]:
    """Which instance a lifecycle event is of: its number, and its service in a pipeline."""
    return event.get("app"), event["instance"]


def count(events: list[dict[str, Any]] | None) -> int | None:
    """How many ``events`` there are; None where they could not be read."""
    return None if events is None else len(events)
