"""A service whose correct output is not one record per input, explored: what its ``--expect``
file says it makes of each input, written into every drawn definition, and the reference
service that does the same, so that a schedule that breaks it is checked against a correct one.

The reference is the catalog's service for the guarantee asked (at-least-once or exactly-once)
given the same place for each input: a value that is not a JSON object, or one the ``[expect]
bad`` predicate names, written to the dead-letter topic as it came (by the exactly-once one, in
the transaction that holds the results and the offsets); one the ``filtered`` predicate names
dropped. Kinds of output on one topic have no reference (no service but the team's knows what
makes a record one kind or another).

A file with ``[apps.NAME]`` tables is a pipeline: the team's service plays in one service's
place (``--app NAME=COMMAND``; a plain command, the last's), the others as the file gives them,
and the reference takes that same place.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafka_replay.definitions.app_option import named_app, placed_app
from kafka_replay.definitions.shapes import read_expect_file

from .toml_text import toml_value

#: Poison pills a schedule's workload carries when the service dead-letters: records a producer
#: wrote with another serializer, at positions the schedule's seed draws.
POISON_PILLS = 3
#: The reference's topic, as the predicates see it (``InputRecord.topic``): the drawn input's.
INPUT = "input"


@dataclass(frozen=True)
class ServiceShape:
    """What an ``--expect`` file adds to each drawn definition: its ``[topics.NAME]`` tables
    and its ``[expect]`` table, as read."""

    path: Path
    topics: Mapping[str, Mapping[str, Any]]
    expect: Mapping[str, Any]
    #: ``[apps.NAME]``: a pipeline's services, upstream first, as written (empty: one app).
    apps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The pipeline's service whose place the explored service takes.
    place: str | None = None

    @property
    def dead_letter(self) -> str | None:
        """The dead-letter topic: ``[expect] dead_letter``, else the first of that role."""
        named = self.expect.get("dead_letter")
        if named:
            return str(named)
        roles = (name for name, table in self.topics.items() if table.get("role") == "dead_letter")
        return next(roles, None)

    def reference(self, command: str) -> str:
        """The reference service's ``command`` made to put each input where this shape says."""
        if self.dead_letter:
            command += f" --on-bad dead-letter --dead-letter-topic {{topic.{self.dead_letter}}}"
        for option in ("bad", "filtered"):
            if self.expect.get(option):
                command += f" --{option} {self.expect[option]}"
        return command

    def poison_at(self, seed: int, records: int) -> list[int]:
        """Where a schedule's workload puts its poison pills (none without a dead-letter
        topic): the same for every schedule of one seed, so shrinking keeps them."""
        if not self.dead_letter:
            return []
        return sorted(random.Random(f"poison:{seed}").sample(range(records), POISON_PILLS))

    def toml_lines(self) -> list[str]:
        """The file's tables, as a drawn definition carries them."""
        lines = []
        for name, table in self.topics.items():
            lines += [f"[topics.{name}]", *(f"{k} = {toml_value(v)}" for k, v in table.items())]
            lines.append("")
        lines += ["[expect]", *(f"{k} = {toml_value(v)}" for k, v in self.expect.items()), ""]
        return lines

    def app_lines(self, command: str, instances: int) -> list[str]:
        """The pipeline's ``[apps.NAME]`` tables, the explored service's ``command`` and
        ``instances`` in its place."""
        lines = []
        for name, table in self.apps.items():
            fields = dict(table)
            if name == self.place:
                fields.update(command=command, instances=instances)
            lines += [f"[apps.{name}]", *(f"{k} = {toml_value(v)}" for k, v in fields.items())]
            lines.append("")
        return lines

    def placed(
        self, app: str | None, image: str | None
    ) -> tuple[ServiceShape, str | None, str | None]:
        """The shape with the explored service's place in its pipeline (``NAME=``; a plain
        one, the last service's), and the command and image without ``NAME=``; ValueError (one
        ``error:`` line) for a place it has not."""
        flag, given = ("--app-image", image) if image else ("--app", app or "")
        if not self.apps:
            if named_app(given)[0] is not None:
                raise ValueError(
                    f"{flag} {given}: NAME= places a pipeline's service, and "
                    f"--expect {self.path} has no [apps.NAME] tables"
                )
            return self, app, image
        try:
            place, rest = placed_app(given, self.apps, f"--expect {self.path}")
        except ValueError as exc:
            raise ValueError(f"{flag} {given}: {exc}") from None
        if image:
            return replace(self, place=place), app, rest
        return replace(self, place=place), rest, image


def check_shape(service: ServiceShape, text: str, scratch: Path) -> None:
    """Whether a drawn definition ``text`` carrying the shape reads: ValueError naming the
    ``--expect`` file and its key when it does not (a dead-letter topic it never makes)."""
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.definitions.model import DefinitionError

    probe = scratch / "expect-check.toml"
    probe.write_text(text)
    try:
        load_incident(probe)
    except DefinitionError as exc:
        raise ValueError(f"--expect {service.path}: {exc.where}: {exc.problem}") from None
    finally:
        probe.unlink()


def read_shape(path: Path) -> ServiceShape:
    """An ``--expect`` file as an exploration takes it; ValueError for a shape no reference
    service can be checked against (its one ``error:`` line)."""
    data = read_expect_file(path, pipeline=True)  # a DefinitionError names the file and key
    expect = dict(data.get("expect", {}))
    where = f"--expect {path}"
    if "fan_out" in expect:
        raise ValueError(
            f"{where}: [expect.fan_out] is not explored: a finding counts only when a correct "
            "service survives the same schedule, and no reference service writes your kinds; "
            "replay the catalog against your service instead (kafka-replay run --expect)"
        )
    apps = {name: dict(table) for name, table in data.get("apps", {}).items()}
    return ServiceShape(path, dict(data.get("topics", {})), expect, apps)
