"""Symptoms: the measurable signs of each post's failure, read from a finished run.

Each symptom is a function of the run's :class:`~kafka_replay.judging.evidence.Evidence` (its
history streams, the brokers' group events and the checker's result) returning a number or a
boolean, or None when the run holds nothing to measure it from. Symptoms the brokers, the output
data or the supervisor can show are measured from them for any app; an instrumented app's own
reports (``Reporter``) are used where it sends them, and must agree (the runner records both).
Definitions name symptoms in their ``signature`` and ``conditions``.

This module is where the built-in symptoms are registered (the name
:data:`kafka_replay.definitions.vocabulary.BUILT_IN` imports) and where the ones a definition
names are measured. The symptoms themselves live by what they measure: the group and its
commits (:mod:`.group_symptoms`), what the group read and delivered
(:mod:`.consumption_symptoms`), the input's partitions (:mod:`.partition_symptoms`),
transactions (:mod:`.transaction_symptoms`), brokers and the network (:mod:`.broker_symptoms`)
and the app's instances (:mod:`.app_symptoms`).
"""

from __future__ import annotations

from kafka_replay.definitions.vocabulary import SYMPTOMS
from kafka_replay.report.outcome import Value

# Imported for their ``@symptom`` registrations.
from . import (  # noqa: F401
    app_symptoms,
    broker_symptoms,
    consumption_symptoms,
    group_symptoms,
    partition_symptoms,
    transaction_symptoms,
)
from .evidence import Evidence


def measure(evidence: Evidence, names: tuple[str, ...]) -> dict[str, Value]:
    """Each of ``names`` measured on ``evidence``, by name."""
    return {name: SYMPTOMS[name](evidence) for name in names}
