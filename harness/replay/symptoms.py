"""Kept for the import path earlier docs gave a plugin's symptom: the registry is
:mod:`kafka_replay.definitions.vocabulary`, the symptoms are measured in
:mod:`kafka_replay.judging.symptoms`."""

from kafka_replay.definitions.vocabulary import SYMPTOMS, symptom
from kafka_replay.judging.symptoms import Evidence

__all__ = ["SYMPTOMS", "Evidence", "symptom"]
