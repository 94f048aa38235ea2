"""Every command the README and docs/ show runs as shown.

Commands are taken from the shell blocks of the Markdown files. A command that starts nothing
(``kafka-replay list``, ``--help``, ``--version``) is run; every other ``kafka-replay``
command is parsed by the real parser and its run settings checked (as ``kafka-replay`` does
before anything starts), a ``compare`` setup by the setup reader, a ``pytest`` command's
options are looked up in ``pytest --help``, and ``./dev`` commands name what ``./dev`` and
the benchmarks take. Placeholders written as ``[--option value]`` (optional) are left out.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from benchmarks.__main__ import BENCHMARKS
from kafka_replay.cli import build_parser
from kafka_replay.replay.compare import parse_setup
from kafka_replay.replay.settings import COMPARE, RUN, RunSettings

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", re.S)
DEV_COMMANDS = ("main", "test", "bench", "setup")
#: Commands of other tools the docs show (installing, inspecting): not ours to run.
OTHERS = ("pip", "python -m pip", "echo", "apt-get", "docker", "cargo", "git", "xdg-open")


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every command of every shell block, continuations joined."""
    found = []
    for doc in DOCS:
        for block in SHELL_BLOCK.findall(doc.read_text()):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                for command in line.split("&&"):
                    words = shlex.split(re.sub(r"\[[^\]]*\]", "", command), comments=True)
                    if words:
                        found.append((doc.name, shlex.join(words)))
    return found


COMMANDS = documented_commands()


def tool(words: list[str]) -> tuple[str, list[str]]:
    """Which tool a command runs, and its arguments."""
    first = Path(words[0]).name
    if first in ("python", "python3") and words[1:3] == ["-m", "pytest"]:
        return "pytest", words[3:]
    if first in ("python", "python3") and words[1:3] == ["-m", "pip"]:
        return "python -m pip", words[3:]
    return first, words[1:]


@cache
def pytest_help() -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def check_kafka_replay(argv: list[str]) -> None:
    if argv in (["list"], ["--version"]) or "--help" in argv:
        done = subprocess.run(
            [sys.executable, "-m", "kafka_replay.cli", *argv],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return
    args = build_parser().parse_args(argv)
    if args.command in ("run", "compare"):
        RunSettings.from_args(args, RUN if args.command == "run" else COMPARE)
    if args.command == "compare":
        for setup in (args.baseline, args.candidate):
            if setup is not None:
                parse_setup(setup)


def check_pytest(argv: list[str]) -> None:
    for word in argv:
        if word.startswith("-") and word not in ("-k", "-m", "-n", "-v", "-q", "-x"):
            assert f"{word.split('=')[0]}" in pytest_help(), f"pytest has no option {word}"


def check_dev(argv: list[str]) -> None:
    assert argv[0] in DEV_COMMANDS, f"./dev has no command {argv[0]}"
    if argv[0] == "bench":
        names = [w for w in argv[1:] if not w.startswith("-") and not w.isdigit()]
        for name in names[:1]:
            assert name in BENCHMARKS, f"no benchmark {name}"


@pytest.mark.parametrize(
    ("where", "command"), COMMANDS, ids=[f"command-{i}" for i in range(len(COMMANDS))]
)
def test_a_documented_command_runs_as_shown(where: str, command: str) -> None:
    name, argv = tool(shlex.split(command))
    if name == "kafka-replay":
        check_kafka_replay(argv)
    elif name == "pytest":
        check_pytest(argv)
    elif name == "dev":
        check_dev(argv)
    else:
        assert name in OTHERS or command.startswith(OTHERS), f"{where}: who runs {command!r}?"
