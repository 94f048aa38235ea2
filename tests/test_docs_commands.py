"""Every command the README and docs/ show runs as shown.

Commands are taken from the shell blocks of the Markdown files. A command that starts nothing
(``kafka-replay list``, ``--help``, ``--version``) is run; every other ``kafka-replay``
command is parsed by the real parser and its run settings checked (as ``kafka-replay`` does
before anything starts), a ``compare`` setup by the setup reader, a ``pytest`` command's
options are looked up in ``pytest --help``, and ``./dev`` commands name what ``./dev`` and
the benchmarks take. Placeholders written as ``[--option value]`` (optional) are left out.

Every form of ``--app`` and ``--app-image`` the docs show, in a command or in prose
(`` `--app NAME=COMMAND` ``), is run by the real ``kafka-replay run``: a form the harness takes
gets as far as the cluster or Docker (each unreachable here, so nothing starts), a service
named wrong is refused before either, and ``NAME=COMMAND`` replays a pipeline once for real.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from benchmarks.__main__ import BENCHMARKS
from benchmarks.matrix import GROUPS as MATRIX_GROUPS
from kafka_replay.apps import AppSpec
from kafka_replay.cli import build_parser
from kafka_replay.cli_explore import SHARED as EXPLORE_OPTIONS
from kafka_replay.definitions.app_option import named_app
from kafka_replay.exploring.families import choose_families
from kafka_replay.replay.compare import parse_setup
from kafka_replay.replay.settings import COMPARE, RUN, RunSettings
from kafka_replay.servers.ports import free_ports

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
    """Which tool a command runs, and its arguments (past the variables it sets first)."""
    while re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]
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
    if args.command == "explore":
        RunSettings.from_args(args, only=EXPLORE_OPTIONS)
        choose_families(args.families)
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
        if names[:1] == ["matrix"]:
            assert set(names[1:]) <= set(MATRIX_GROUPS), f"no matrix group in {names[1:]}"


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


#: ``--app`` / ``--app-image`` in prose: `` `--app NAME=COMMAND` ``, `` `--app=--flag ...` ``.
APP_IN_PROSE = re.compile(r"`(--(?:replay-)?app(?:-image)?)[ =]([^`]+)`")
#: Each face's name of the two options (pytest's are read as the command line's).
APP_FLAGS = {"--app": "--app", "--replay-app": "--app", "--app-image": "--app-image",
             "--replay-app-image": "--app-image"}  # fmt: skip


def documented_app_options() -> set[tuple[str, str]]:
    """(option, value) of every ``--app`` and ``--app-image`` the docs show."""
    found = set()
    for _, command in COMMANDS:
        words = shlex.split(command)
        for at, word in enumerate(words):
            flag, equals, value = word.partition("=")
            if flag in APP_FLAGS:
                found.add((APP_FLAGS[flag], value if equals else words[at + 1]))
    for doc in DOCS:
        for flag, value in APP_IN_PROSE.findall(doc.read_text()):
            found.add((APP_FLAGS[flag], shlex.split(value)[0] if value[0] in "'\"" else value))
    return found


def app_form(option: str, value: str) -> str:
    """The form of a documented value, read as the harness reads it."""
    named = named_app(value)[0] is not None
    if option == "--app-image":
        return "NAME=IMAGE" if named else "IMAGE"
    if value.startswith("-"):
        return "ARGUMENTS"  # an image's, written --app=--flag
    if named:
        return "NAME=COMMAND"
    return "module:function" if AppSpec.parse(value).target else "COMMAND"


CHAIN = "poll-timeout-rebalance-chain"
#: The pipeline form as docs/service-shapes.md gives it: the chain's billing service replaced.
BILLING = "billing=python -m kafka_replay_incidents.apps.batch_forwarder"
#: Where a form the harness takes stops: the cluster (or Docker) given does not answer.
NO_CLUSTER = "no Kafka broker answers at 127.0.0.1:{closed}"
NO_DOCKER = "the app image {image} needs a Docker daemon and none answers"
#: How each form is run: (form, arguments after ``kafka-replay run``, what its error says).
#: Every row stops before any broker starts; ``NAME=COMMAND`` taken replays, in its own test.
APP_FORM_ROWS = {
    "command": ("COMMAND", ["zombie-commit", "--app", "python -m svc --opt=1 {bootstrap}"],
                NO_CLUSTER),
    "module-function": ("module:function", ["zombie-commit", "--app", "tests.apps.echo:run"],
                        NO_CLUSTER),
    "python-placeholder": (
        "COMMAND", ["zombie-commit", "--app",
                    "{python} -m kafka_replay.apps.connect_worker docs/connect/sink.json"],
        NO_CLUSTER),
    "name-command-not-found": (
        "NAME=COMMAND", [CHAIN, "--app", BILLING.replace("python", "pythn")],
        "the app command 'pythn' for service billing was not found"),
    "name-command-no-such-service": (
        "NAME=COMMAND", [CHAIN, "--app", "biling=python -m svc"],
        f"--app 'biling=python -m svc': no service biling in {CHAIN}; its services: "
        "onboarding, billing"),
    "name-command-one-app": (
        "NAME=COMMAND", ["zombie-commit", "--app", BILLING],
        "no service billing in zombie-commit, which runs one app: give the app alone"),
    "image": ("IMAGE", ["zombie-commit", "--app-image", "team/orders:1"],
              NO_DOCKER.format(image="team/orders:1")),
    "image-arguments": (
        "ARGUMENTS", ["crash-restart-eos", "--app-image", "team/orders:1", "--app=--transactional"],
        NO_DOCKER.format(image="team/orders:1")),
    "name-image": ("NAME=IMAGE", [CHAIN, "--app-image", "billing=team/billing:1"],
                   NO_DOCKER.format(image="team/billing:1")),
    "name-image-no-such-service": (
        "NAME=IMAGE", [CHAIN, "--app-image", "biling=team/billing:1"],
        f"--app-image 'biling=team/billing:1': no service biling in {CHAIN}; its services: "
        "onboarding, billing"),
}  # fmt: skip


def kafka_replay_run(
    argv: list[str], timeout: float, **env: str
) -> subprocess.CompletedProcess[str]:
    """``kafka-replay run ARGV`` as a user types it, from the repository, with this
    environment's ``python`` first on PATH (the documented commands say ``python``)."""
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / "kafka-replay"), "run", *argv], cwd=ROOT, capture_output=True, text=True,
        timeout=timeout,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "400",
             **env},
    )  # fmt: skip


def test_every_documented_app_form_has_a_row() -> None:
    """A form the docs start showing is run here too; a row for a form no doc shows goes."""
    documented = {app_form(option, value) for option, value in documented_app_options()}
    assert {"NAME=COMMAND", "NAME=IMAGE", "ARGUMENTS", "module:function"} <= documented
    assert documented == {form for form, _, _ in APP_FORM_ROWS.values()}


@pytest.mark.parametrize(
    ("form", "argv", "says"), list(APP_FORM_ROWS.values()), ids=list(APP_FORM_ROWS)
)
def test_a_documented_app_form_gets_as_far_as_the_cluster(
    form: str, argv: list[str], says: str
) -> None:
    """Taken forms stop at a cluster and a Docker daemon that do not answer, a wrong one
    before: in seconds, whether Docker is here or not."""
    (closed,) = free_ports(1)
    where = ["--profile", "remediated", "--kafka-bootstrap", f"127.0.0.1:{closed}"]
    result = kafka_replay_run([*argv, *where], 120, DOCKER_HOST=f"tcp://127.0.0.1:{closed}")
    message = " ".join(result.stderr.split())
    assert result.returncode == 2, message
    assert says.replace("{closed}", str(closed)) in message, message


def test_a_pipeline_service_given_as_name_command_replays_in_its_place(tmp_path: Path) -> None:
    """The pipeline form, typed as docs/service-shapes.md gives it, replays the chain with
    the command in billing's place, and the run records it there."""
    result = kafka_replay_run(
        [CHAIN, "--profile", "remediated", "--app", BILLING, "--report", str(tmp_path)], 600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    meta = json.loads((tmp_path / "runs" / f"{CHAIN}-remediated" / "run.json").read_text())
    assert meta["settings"]["app"] == BILLING
    assert meta["services"]["billing"]["command"] == shlex.split(BILLING.partition("=")[2])
    reference = meta["services"]["onboarding"]["command"]  # {python}: the harness's own
    assert Path(reference[0]).is_absolute() and reference[1:] == BILLING.split()[1:]
