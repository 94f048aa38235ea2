"""Where incidents come from: the catalog shipped in the ``incidents`` package, and the
directories a team keeps of its own (``--incidents DIR``, or ``incidents = [...]`` under
``[tool.kafka-replay]`` in its ``pyproject.toml``).

The catalog is found without importing it, so the engine never depends on it.
"""

from __future__ import annotations

import importlib.util
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

from .model import DefinitionError, Incident, toml_error

CATALOG_PACKAGE = "kafka_replay_incidents"
SETTINGS_TABLE = "kafka-replay"


def catalog_dir() -> Path | None:
    """The directory of the catalog that ships with the harness, if it is installed."""
    spec = importlib.util.find_spec(CATALOG_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def configured_directories(start: Path) -> list[Path]:
    """``[tool.kafka-replay] incidents`` of the nearest ``pyproject.toml`` at or above ``start``.

    Paths are relative to that ``pyproject.toml``.
    """
    for folder in (start.resolve(), *start.resolve().parents):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        text = pyproject.read_text()
        try:
            settings = tomllib.loads(text).get("tool", {}).get(SETTINGS_TABLE, {})
        except tomllib.TOMLDecodeError as exc:
            raise DefinitionError(pyproject, *toml_error(text, exc)) from exc
        listed = settings.get("incidents", [])
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise DefinitionError(
                pyproject, f"tool.{SETTINGS_TABLE}.incidents", "must be a list of directories"
            )
        return [folder / p for p in listed]
    return []


def incident_directories(extra: Iterable[str | Path] = (), start: Path | None = None) -> list[Path]:
    """The catalog, then the project's configured directories, then ``extra``; each once."""
    found = [catalog_dir(), *configured_directories(start or Path.cwd()), *map(Path, extra)]
    unique: dict[Path, None] = {}
    for directory in found:
        if directory is not None:
            unique.setdefault(directory.resolve(), None)
    return list(unique)


class IncidentsByName(dict[str, Incident]):
    """Incidents by name; a name not among them is read from ``NAME.toml`` in one of
    ``directories`` when first asked (a lane of ``kafka-replay explore`` is given definitions
    drawn after it started)."""

    def __init__(self, incidents: Mapping[str, Incident], directories: Iterable[Path]) -> None:
        super().__init__(incidents)
        self.directories = tuple(directories)

    def __missing__(self, name: str) -> Incident:
        from .definition import load_incident

        for directory in self.directories:
            path = directory / f"{name}.toml"
            if path.is_file():
                self[name] = incident = load_incident(path)
                return incident
        raise KeyError(name)


@cache
def load_incidents(directories: tuple[Path, ...]) -> dict[str, Incident]:
    """Every incident defined in ``directories`` (``*.toml``), by name; a name clash is an error."""
    from .definition import load_incident  # the engine's heavy imports, only when needed

    incidents: dict[str, Incident] = {}
    for directory in directories:
        if not directory.is_dir():
            raise DefinitionError(directory, "(directory)", "is not a directory of incidents")
        for path in sorted(directory.glob("*.toml")):
            if path.name == "pyproject.toml":
                continue
            incident = load_incident(path)
            if incident.name in incidents:
                other = incidents[incident.name].source
                raise DefinitionError(
                    path, "name", f"{incident.name!r} is already defined in {other}; rename one"
                )
            incidents[incident.name] = incident
    return incidents


def select(incidents: dict[str, Incident], names: Sequence[str]) -> list[Incident]:
    """The named incidents (all when ``names`` is empty), with an error naming unknown ones."""
    unknown = [n for n in names if n not in incidents]
    if unknown:
        raise KeyError(
            f"no incident named {', '.join(unknown)}; known incidents: {', '.join(incidents)}"
        )
    return [incidents[n] for n in names] if names else list(incidents.values())


def at_scale(incidents: Sequence[Incident], scale: int) -> list[Incident]:
    """The incidents read again with ``scale`` times their records (``--scale``)."""
    if scale == 1:
        return list(incidents)
    from .definition import load_incident

    return [load_incident(incident.source, scale) for incident in incidents]
