"""One reader of a finished run's directory, for every consumer (the symptoms, the HTML report).

Read through :class:`~kafka_replay.history.store.RunHistory`, never by literal paths, and
generically: every stream found under ``events/`` is loaded by its name, so a new stream is
there for its readers without code here; a stream or file the run did not leave reads as None
("not recorded"), which is not the same as recorded and empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from . import derived
from .store import (
    APP_PREFIX,
    CHECK,
    DELIVERIES,
    META,
    OUTPUT_TOPIC_CHECK,
    PLACE_CHECKS,
    SIDE_EFFECTS_CHECK,
    RunHistory,
)

Event = dict[str, Any]


@dataclass
class RecordedRun:
    """What one run left: its meta, its streams by name, and its check's files."""

    root: Path
    meta: dict[str, Any] = field(default_factory=dict)
    #: Every stream found under ``events/``, by name (``app-<instance>`` ones included).
    streams: dict[str, list[Event]] = field(default_factory=dict)
    check: dict[str, Any] | None = None  # check.json
    side_effects: dict[str, Any] | None = None  # the check of an app's side-effect topic
    deliveries: list[Event] | None = None  # every output matched to its input, output order
    #: The output topic's check when a ``[sink]`` table was checked too (``check`` is the table's)
    output_topic: dict[str, Any] | None = None
    #: Every place's check by name, where results landed in more than one (the first is
    #: ``check``)
    places: dict[str, Any] | None = None

    @classmethod
    def read(cls, root: Path, *, outputs: bool = True) -> RecordedRun:
        """Read ``root``; without ``outputs`` the check's files are left unread (the runner
        holds them in memory when it measures the symptoms)."""
        history = RunHistory.existing(root)
        streams = {name: history.read(name) for name in history.stream_names()}
        if not outputs:
            return cls(history.root, history.read_json(META) or {}, streams)
        return cls(
            history.root,
            history.read_json(META) or {},
            streams,
            history.read_json(CHECK),
            history.read_json(SIDE_EFFECTS_CHECK),
            history.read_lines(DELIVERIES),
            history.read_json(OUTPUT_TOPIC_CHECK),
            history.read_json(PLACE_CHECKS),
        )

    def stream(self, name: str) -> list[Event] | None:
        """The events of ``events/<name>.jsonl``; None when the run did not record it."""
        return self.streams.get(name)

    @cached_property
    def app(self) -> list[Event] | None:
        """Every instrumented app instance's reports, in time order; None when none reported."""
        names = [name for name in self.streams if name.startswith(APP_PREFIX)]
        if not names:
            return None
        events = (e for name in sorted(names) for e in self.streams[name])
        return sorted(events, key=lambda e: e.get("ts", 0))

    @property
    def input_topic(self) -> str | None:
        """The topic whose consumption the symptoms follow: the input, or in a pipeline what
        its last service (the one whose results are judged) reads first."""
        topics = self.meta.get("topics") or {}
        services = list((self.meta.get("services") or {}).values())
        if services and services[-1].get("reads"):
            return topics.get(services[-1]["reads"][0])
        return topics.get("input")

    @cached_property
    def start(self) -> float:
        """When the run started (``run.json``), else its earliest recorded event."""
        started = self.meta.get("started")
        if started:
            return float(started)
        times = [
            e["ts"]
            for name, events in self.streams.items()
            if not name.startswith(APP_PREFIX)
            for e in events
            if "ts" in e
        ]
        return float(min(times, default=0.0))

    def t(self, ts: float) -> float:
        """Seconds since the run started: the clock every view of the run shares."""
        return round(ts - self.start, 3)

    def checks(self) -> list[tuple[str, dict[str, Any], list[Event] | None]]:
        """Each of the checker's results: (prefix of its names, result, the outputs it matched)."""
        others = [("output topic: ", self.output_topic, None)]
        if self.places:
            others = [(f"{name}: ", check, None) for name, check in list(self.places.items())[1:]]
        found = [
            ("", self.check, self.deliveries),
            *others,
            ("side effects: ", self.side_effects, None),
        ]
        return [(prefix, check, outputs) for prefix, check, outputs in found if check]

    def consumed_spans(self) -> list[tuple[float, derived.Span]]:
        """(time, span) of each batch the app took (see :func:`derived.consumed_spans`)."""
        return derived.consumed_spans(self.app, self.deliveries, self.input_topic)

    def arrivals(self, partition: int) -> list[tuple[float, int, int]]:
        """(time, first, last offset) of each batch of ``partition`` the app took."""
        return derived.arrivals(self.consumed_spans(), partition)
