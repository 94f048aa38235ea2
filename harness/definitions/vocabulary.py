"""The words a definition may use: its step kinds (each with the fields it takes) and its
symptoms, as registries the reader checks a definition against.

The rooms that play steps and measure symptoms fill them (``@step_kind`` in
:mod:`kafka_replay.playing.steps` and :mod:`kafka_replay.playing.fault_steps`, ``@symptom`` in
:mod:`kafka_replay.judging.symptoms`), and so may a team's plugin. Reading a definition depends
on the words, not on how they are played or measured: :func:`step_kinds` and
:func:`symptom_names` import the built-in ones by name (:data:`BUILT_IN`) the first time they
are asked, as the cluster room lists its backends.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_replay.cluster.capabilities import CAPABILITIES
from kafka_replay.report.outcome import Value

#: The modules that register the built-in step kinds and symptoms.
BUILT_IN = (
    "kafka_replay.playing.steps",
    "kafka_replay.playing.fault_steps",
    "kafka_replay.playing.failover",
    "kafka_replay.playing.election_steps",
    "kafka_replay.playing.compaction_steps",
    "kafka_replay.judging.symptoms",
)

REQUIRED = ...


@dataclass(frozen=True)
class Field:
    """One field a step takes: its type, its default (``REQUIRED`` if none), allowed values."""

    kind: type | tuple[type, ...]
    default: Any = REQUIRED
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepContext:
    """What a step's options are checked against: the rest of its definition."""

    workloads: set[str]
    #: Every name a step may give a topic (its own, or its role's: see ``topic_names``),
    #: with the topic's partitions.
    partitions: Mapping[str, int] = field(default_factory=dict)
    brokers: int = 1
    #: The services a step may name (``app``): a pipeline's, else the one ``app``.
    apps: tuple[str, ...] = ("app",)


#: Checks a step's options against the rest of its definition: ``(field, problem)`` or None.
Validator = Callable[[Mapping[str, Any], StepContext], tuple[str, str] | None]
#: Plays a step: ``play(stage, step) -> what it found`` (``stage``: a
#: :class:`kafka_replay.playing.stage.Stage`).
Play = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class NeedsByField:
    """A capability a step needs for some values of one of its fields only: a fault aimed at
    ``EndTxn`` requests needs a broker that has transactions, one aimed at ``Fetch`` does not."""

    field: str
    capabilities: Mapping[str, str]  # the field's value -> the capability it needs

    def __call__(self, options: Mapping[str, Any]) -> str | None:
        return self.capabilities.get(options.get(self.field))


@dataclass(frozen=True)
class StepKind:
    name: str
    fields: Mapping[str, Field]
    play: Play
    summary: str
    validate: Validator | None = None
    #: What the cluster must be able to do (a name of :mod:`kafka_replay.cluster.capabilities`).
    needs: str | NeedsByField | None = None

    def needs_for(self, options: Mapping[str, Any]) -> str | None:
        """The capability a step of this kind with ``options`` needs, if any."""
        return self.needs(options) if isinstance(self.needs, NeedsByField) else self.needs

    @property
    def may_need(self) -> tuple[str, ...]:
        """Every capability a step of this kind may need."""
        if isinstance(self.needs, NeedsByField):
            return tuple(sorted(set(self.needs.capabilities.values())))
        return (self.needs,) if self.needs else ()


#: Every step a definition may use, by name, in the order they were registered.
STEPS: dict[str, StepKind] = {}


def step_kind(
    name: str,
    validate: Validator | None = None,
    needs: str | NeedsByField | None = None,
    **fields: Field,
) -> Callable[[Play], Play]:
    """Register a step; its docstring's first line is its summary in the docs.

    ``needs``: the capability a backend must have for the step, or a :class:`NeedsByField`
    for one that depends on a field's value (a backend that lacks it makes the run not
    applicable, with the backend's reason).
    """

    def register(play: Play) -> Play:
        summary = (play.__doc__ or "").strip().splitlines()[0]
        kind = StepKind(name, fields, play, summary, validate, needs)
        for capability in kind.may_need:
            if capability not in CAPABILITIES:
                raise ValueError(
                    f"step {name} needs {capability!r}, not one of {', '.join(CAPABILITIES)}"
                )
        STEPS[name] = kind
        return play

    return register


#: A symptom: a function of a run's evidence (:class:`kafka_replay.judging.evidence.Evidence`).
Symptom = Callable[[Any], Value]
#: Every symptom a definition may name, by name.
SYMPTOMS: dict[str, Symptom] = {}


def symptom(function: Symptom) -> Symptom:
    """Register ``function`` under its name; its docstring's first line describes it."""
    SYMPTOMS[function.__name__] = function
    return function


def _built_in() -> None:
    for module in BUILT_IN:
        importlib.import_module(module)


def step_kinds() -> Mapping[str, StepKind]:
    """Every registered step kind, the built-in ones first imported."""
    _built_in()
    return STEPS


def symptom_names() -> set[str]:
    """The name of every registered symptom, the built-in ones first imported."""
    _built_in()
    return set(SYMPTOMS)
