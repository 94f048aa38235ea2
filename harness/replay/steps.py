"""Kept for the import path earlier docs gave a plugin's step: the registry is
:mod:`kafka_replay.definitions.vocabulary`, the steps are played on a
:class:`kafka_replay.playing.stage.Stage`."""

from kafka_replay.definitions.vocabulary import REQUIRED, STEPS, Field, StepContext, step_kind
from kafka_replay.playing.stage import Stage

__all__ = ["REQUIRED", "STEPS", "Field", "Stage", "StepContext", "step_kind"]
