"""What a definition asks of its cluster, read and checked: how many brokers, the feature
levels its storage is formatted with, and why each broker setting is there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .model import SETTING_NEEDS, DefinitionError, Profile, SettingNeed

#: The most nodes a definition may ask for: each is a JVM (or container) of its own.
MAX_BROKERS = 5
#: A Kafka feature's name (``transaction.version``), as ``kafka-storage format --feature`` takes.
FEATURE_NAME = re.compile(r"^[a-z][a-z_]*(\.[a-z_]+)*\.version$")
NOT_A_FEATURE = (
    "is not a feature a definition may set: one of Kafka's feature names ending in .version "
    "(transaction.version, group.version), not metadata.version, which the release sets"
)


def read_brokers(path: Path, brokers: int, where: str = "brokers") -> int:
    """``brokers``: the size of the incident's cluster, every profile alike."""
    if not 1 <= brokers <= MAX_BROKERS:
        raise DefinitionError(
            path, where, f"{brokers} brokers cannot run here; allowed: 1 to {MAX_BROKERS}"
        )
    return brokers


def read_features(path: Path, table: dict[str, Any]) -> dict[str, int]:
    """``[features]``: a level per Kafka feature, set when the cluster's storage is formatted."""
    for name, level in table.items():
        where = f"features.{name}"
        if not FEATURE_NAME.match(name) or name == "metadata.version":
            raise DefinitionError(path, where, NOT_A_FEATURE)
        if isinstance(level, bool) or not isinstance(level, int) or level < 0:
            raise DefinitionError(path, where, "must be a feature level: a whole number, 0 or more")
    return dict(table)


def read_broker_needs(
    path: Path, table: dict[str, Any], profiles: Mapping[str, Profile]
) -> dict[str, SettingNeed]:
    """``[broker_needs]``: per broker setting, ``"KIND: why"`` (KIND one of SETTING_NEEDS)."""
    settings = sorted({key for profile in profiles.values() for key in profile.broker})
    needs = {}
    for key, text in table.items():
        where = f"broker_needs.{key}"
        if key not in settings:
            having = ", ".join(settings) or "none"
            raise DefinitionError(
                path, where, f"is not a broker setting of this incident (its settings: {having})"
            )
        kind, _, why = str(text).partition(":") if isinstance(text, str) else ("", "", "")
        if kind.strip() not in SETTING_NEEDS or not why.strip():
            raise DefinitionError(
                path,
                where,
                f"must be a string 'KIND: why the incident sets it', KIND one of "
                f"{', '.join(SETTING_NEEDS)}",
            )
        needs[key] = SettingNeed(kind.strip(), why.strip())
    return needs
