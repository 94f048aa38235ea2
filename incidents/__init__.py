"""The incident catalog: each post-mortem's incident as a declarative definition.

``<name>.toml`` beside this file defines one incident; :func:`catalog` reads them all.
The reference apps live in :mod:`incidents.apps`, the runner in :mod:`incidents.runner`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from .definition import PROFILES, DefinitionError, Incident, load_incident
from .symptoms import SYMPTOMS

CATALOG_DIR = Path(__file__).parent


@cache
def catalog(directory: Path = CATALOG_DIR) -> dict[str, Incident]:
    """Every incident defined in ``directory``, by name, in file name order."""
    known = set(SYMPTOMS)
    return {
        incident.name: incident
        for incident in (load_incident(path, known) for path in sorted(directory.glob("*.toml")))
    }


def select(names: list[str] | None) -> list[Incident]:
    """The named incidents (all when ``names`` is empty), with an error naming unknown ones."""
    incidents = catalog()
    unknown = [n for n in names or [] if n not in incidents]
    if unknown:
        raise KeyError(
            f"no incident named {', '.join(unknown)}; the catalog has {', '.join(incidents)}"
        )
    return [incidents[n] for n in names] if names else list(incidents.values())


__all__ = ["PROFILES", "DefinitionError", "Incident", "catalog", "select"]
