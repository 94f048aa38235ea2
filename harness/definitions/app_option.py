"""``--app`` and ``--app-image``, read once for every face of the harness (``kafka-replay run``
and ``compare``, the action's ``app`` and ``app-image``, pytest's ``--replay-app`` and
``--replay-app-image``): which service's place the team's app takes, and the one check, before
any broker starts, that every run can start it.

``NAME=COMMAND`` (``NAME=IMAGE``) puts the app in service ``NAME``'s place; a plain command or
image takes the last service's (the one whose results are judged; a one-app incident's only
one). ``NAME`` is a bare name right before the first ``=``, with no blank before it, so a plain
command may hold ``=`` in later arguments (``python -m svc --opt=1``) or start with ``env A=B``.
A ``NAME`` that is no service of the incident is refused, naming its services, never quietly
taken for the last one.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from kafka_replay.apps import AppSpec
from kafka_replay.apps.contract import starting_directory_first

from .command_text import command_problem
from .model import Incident

#: ``NAME=COMMAND``: a team's service for one place of a pipeline.
_NAMED_APP = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)=(\S.*)$", re.DOTALL)


def named_app(given: str) -> tuple[str | None, str]:
    """``(NAME, COMMAND)`` of ``NAME=COMMAND``; ``(None, given)`` of a plain command or image."""
    match = _NAMED_APP.match(given.strip())
    return (match.group(1), match.group(2)) if match else (None, given)


def placed_app(
    given: str, services: Collection[str], incident: str = "this incident"
) -> tuple[str, str]:
    """``(service, command)`` of ``--app`` (or ``(service, image)`` of ``--app-image``): the
    named service's place, or the last service's for a plain one. Raises ValueError, naming
    the services, for a ``NAME`` the incident has none of."""
    name, command = named_app(given)
    if name is None:
        return list(services)[-1], given
    if name in services:
        return name, command
    if len(services) == 1:
        raise ValueError(
            f"no service {name} in {incident}, which runs one app: give the app alone, "
            "without NAME="
        )
    raise ValueError(f"no service {name} in {incident}; its services: {', '.join(services)}")


@dataclass(frozen=True)
class GivenApp:
    """``--app`` or ``--app-image`` (``flag``) as the person wrote it (``given``), read once:
    the service it names (``name``; None: a plain one, for the last service's place) and the
    command or image it gives (``text``, without ``NAME=``)."""

    flag: str
    given: str
    name: str | None
    text: str

    @classmethod
    def read(cls, flag: str, given: str | None) -> GivenApp | None:
        if not given:
            return None
        name, text = named_app(given)
        return cls(flag, given, name, text.strip() if flag == "--app-image" else text)

    def place(self, services: Collection[str], incident: str = "this incident") -> str:
        """The service whose place the app takes; ValueError, naming the option as written
        and the incident's services, for a ``NAME`` it has none of."""
        try:
            return placed_app(self.given, services, incident)[0]
        except ValueError as exc:
            raise ValueError(f"{self.flag} {self.given!r}: {exc}") from None

    def __str__(self) -> str:
        return self.given


def check_placed_app(
    app: GivenApp | None, image: GivenApp | None, incidents: Iterable[Incident]
) -> None:
    """Refuse at once what the runs of ``incidents`` could not start, rather than after a
    broker started: a ``NAME`` that is no service of an incident, a command not found, a
    module that does not import, an image no Docker daemon has. Names are checked first, so a
    wrong one is said before Docker is asked."""
    command: str | None = None  # the same in every run: what follows NAME=, if any
    container: str | None = None
    for incident in incidents:
        _check_files(app, incident)
        for profile in incident.profiles.values():
            services = profile.services
            aimed = image.place(services, incident.name) if image is not None else None
            placed = app.place(services, incident.name) if app is not None else None
            if image is not None:
                container = image.text
            if app is not None and aimed != placed:
                command = app.text  # else it is the container's arguments
    if command is not None and app is not None:
        check_command(command, app.name)
    if container is not None:
        from kafka_replay.apps.image_app import check_app_image

        check_app_image(container)


def _check_files(app: GivenApp | None, incident: Incident) -> None:
    """Refuse an app whose command names, through ``{here}`` (the definition's directory), a
    file that is not there, or a placeholder no run fills in."""
    if app is None:
        return
    problem = command_problem(app.text, incident.source.parent)
    if problem is not None:
        raise ValueError(f"--app {app.given!r}, run under {incident.name}: {problem}")


def check_one_service(app: str | None, image: str | None) -> None:
    """What ``kafka-replay explore`` plays: one service, a command or an image (``app`` then
    its arguments), refused at once as a run refuses it, before any broker starts."""
    for flag, given in (("--app", app), ("--app-image", image)):
        if given and named_app(given)[0] is not None:
            raise ValueError(
                f"{flag} {given}: explore takes one service, given alone (NAME=... places a "
                "pipeline's service, and needs the pipeline: --expect FILE with [apps.NAME])"
            )
    if image:
        from kafka_replay.apps.image_app import check_app_image

        check_app_image(image.strip())
    elif app:
        check_command(app)


def check_command(command: str, service: str | None = None) -> None:
    """Refuse a ``module:function`` that does not import, or a command whose program is
    neither a path nor on PATH (a placeholder in it is filled only when the run starts)."""
    spec = AppSpec.parse(command)
    serving = f" for service {service}" if service else ""
    if spec.target is not None:
        module = spec.target.split(":")[0]
        if not _importable(module):
            raise ValueError(
                f"the app {spec.target}{serving} cannot be imported: no module {module} "
                "(run from the directory that holds it, or put it on PYTHONPATH)"
            )
    elif "{" not in spec.argv[0] and shutil.which(spec.argv[0]) is None:
        raise ValueError(
            f"the app command {spec.argv[0]!r}{serving} was not found: give the path of an "
            "executable, or a command on PATH"
        )


def _importable(module: str) -> bool:
    """Whether ``module`` imports where the app's process looks: the directory the run started
    in first (as ``run_callable`` puts it), then the harness's own path."""
    with starting_directory_first():
        try:
            return importlib.util.find_spec(module) is not None
        except ImportError:  # its package is missing
            return False
