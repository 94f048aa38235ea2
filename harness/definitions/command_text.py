"""The placeholders an app's command may hold, checked before any broker starts.

A definition's command is filled in at each start (``{bootstrap}``, ``{topic.NAME}``, ...), so a
misspelt placeholder would reach the app as it was written, and a file beside the definition
could only be named relative to wherever ``kafka-replay`` runs. Here an unknown ``{name}`` is
refused when the definition is read, ``{here}`` stands for the definition's own directory, and a
word that names a file through ``{here}`` must name one that exists.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from kafka_replay.apps.contract import is_placeholder

from .table import Table

#: The definition's own directory, wherever the run is started from.
HERE = "{here}"
#: What a definition's command may name besides the contract's placeholders: the directory of
#: the definition, the compiled reference Flink job beside it, the side-effect topic.
DEFINITION_PLACEHOLDERS = ("here", "flink_job", "side_effects_topic")
#: ``{name}`` as a placeholder is written; Connect's ``${topic}`` and JSON's braces are not one.
_WRITTEN = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def unknown_placeholders(command: str, also: tuple[str, ...] = ()) -> list[str]:
    """The ``{name}`` words of ``command`` that no run fills in (``also``: more it may hold)."""
    known = (*DEFINITION_PLACEHOLDERS, *also)
    names = _WRITTEN.findall(command)
    return [f"{{{n}}}" for n in dict.fromkeys(names) if n not in known and not is_placeholder(n)]


def fill_here(command: str, directory: Path) -> str:
    """``command`` with ``{here}`` replaced by ``directory`` (absolute, quoted for the shell
    words the command is split into)."""
    if HERE not in command:
        return command
    return command.replace(HERE, shlex.quote(str(directory.resolve())))


def missing_files(command: str, directory: Path) -> list[str]:
    """Each word of ``command`` written with ``{here}`` that names nothing on disk, as filled."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []  # not shell words: the app's own parse says so
    here = str(directory.resolve())
    missing = []
    for word in words:
        named = _through_here(word)
        path = named.replace(HERE, here) if named else ""
        if path and "{" not in path and not Path(path).exists():
            missing.append(path)
    return missing


def _through_here(word: str) -> str | None:
    """What a word names through ``{here}``: the word itself, or the value of ``KEY={here}...``."""
    if word.startswith(HERE):
        return word
    _, equals, value = word.partition("=")
    return value if equals and value.startswith(HERE) else None


def command_problem(command: str, directory: Path, also: tuple[str, ...] = ()) -> str | None:
    """Why ``command`` (of a definition in ``directory``) cannot run, or None."""
    unknown = unknown_placeholders(command, also)
    if unknown:
        allowed = ", ".join(f"{{{n}}}" for n in (*DEFINITION_PLACEHOLDERS, *also))
        return (
            f"{', '.join(unknown)}: no such placeholder (allowed: the contract's, {allowed}; "
            "see the README's app contract)"
        )
    missing = missing_files(command, directory)
    if missing:
        return f"names {missing[0]}, which does not exist ({HERE} is {directory.resolve()})"
    return None


def check_commands(app: Table, command: str, jvm: str | None) -> None:
    """Refuse an ``[app]`` whose ``command`` (or ``jvm``, which may name ``{java}``) cannot run,
    naming the field."""
    if jvm is not None and not jvm.startswith("{java} "):
        raise app.fail("jvm", "must start with {java} (then the class and its flags)")
    for name, text, also in (("command", command, ()), ("jvm", jvm, ("java",))):
        problem = command_problem(text, app.source.parent, also) if text else None
        if problem is not None:
            raise app.fail(name, problem)
