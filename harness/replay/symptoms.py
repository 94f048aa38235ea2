"""Kept for the import path earlier docs gave a plugin's symptom: the registry is
:mod:`kafka_replay.definitions.vocabulary`, the evidence a symptom reads is
:mod:`kafka_replay.judging.evidence`, the built-in symptoms are registered by
:mod:`kafka_replay.judging.symptoms`."""

from kafka_replay.definitions.vocabulary import SYMPTOMS, symptom
from kafka_replay.judging import symptoms as _built_in  # noqa: F401  (registers them, as before)
from kafka_replay.judging.evidence import Evidence

__all__ = ["SYMPTOMS", "Evidence", "symptom"]
