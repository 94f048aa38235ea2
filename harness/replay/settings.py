"""Run settings: every option a run takes, declared once for every face of the harness.

``kafka-replay run``, ``kafka-replay compare`` and the pytest plugin add their options from
:data:`OPTIONS`; :class:`RunSettings` holds what was chosen, checks it, records it in every run
directory, and turns back into ``kafka-replay run`` options for a child process (a lane of
``--jobs``, one side of a comparison). So a lane, a compare side and a pytest item get the same
settings by construction, and an option added with :func:`add_run_option` (by a plugin, say)
appears in all of them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.apps.client_libraries import parse_client
from kafka_replay.apps.supervisor import RESTART_MODES, parse_restart
from kafka_replay.checker import GUARANTEES
from kafka_replay.cluster.backends import backend_argument, backends_help
from kafka_replay.cluster.versions import DEFAULT_KAFKA_VERSION
from kafka_replay.definitions.model import GROUP_PROTOCOLS, PROFILES
from kafka_replay.definitions.overrides import client_settings, parse_settings
from kafka_replay.playing.shards import parse_shard
from kafka_replay.plugins import load_plugins

if TYPE_CHECKING:
    import pytest

    from kafka_replay.playing.run_options import RunOptions
    from kafka_replay.playing.session import CatalogSession

#: The faces an option may be offered on.
RUN, COMPARE, PYTEST = "run", "compare", "pytest"
EVERY_FACE = frozenset({RUN, COMPARE, PYTEST})


@dataclass(frozen=True)
class Option:
    """One run setting: its name (``kafka_version`` is ``--kafka-version``), help and checks."""

    name: str
    help: str | Callable[[], str]
    type: Callable[[str], Any] = str
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    #: Repeatable: its value is the list of every one given.
    repeat: bool = False
    #: A switch: given (True) or not (False), no value.
    switch: bool = False
    #: Where it is offered: ``run``, ``compare``, ``pytest``.
    faces: frozenset[str] = EVERY_FACE
    #: Passed on to a child ``kafka-replay run`` (a lane, a compare side).
    child: bool = True
    #: Raises ValueError, naming the option and what is wrong, for a value that cannot be used.
    check: Callable[[Any], None] | None = None
    #: How the value is recorded in ``run.json`` and reports (a password hidden); None: as is.
    shown: Callable[[Any], Any] | None = None
    #: An environment variable that gives a child the value instead of its command line, where
    #: any process could read it (a password); the option's default when it is set.
    env: str | None = None
    #: The field of the engine's :class:`~kafka_replay.playing.run_options.RunOptions` it fills,
    #: for an option a run reads (None: the face's own, as ``jobs`` or ``report``), and how its
    #: value is given there (None: as it was chosen).
    engine: str | None = None
    to_engine: Callable[[Any], Any] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def pytest_flag(self) -> str:
        """Under pytest every option starts with ``--replay-`` (its value is kept under
        ``replay_<name>``), so none meets a project's own."""
        return "--replay-" + self.name.replace("_", "-")

    @property
    def empty(self) -> Any:
        """Its value when not given."""
        if self.repeat:
            return []
        return False if self.switch else self.default

    @property
    def pytest_dest(self) -> str:
        return "replay_" + self.name

    def argparse_kwargs(self, dest: str | None = None) -> dict[str, Any]:
        """The keywords of ``add_argument`` (pytest's ``addoption`` takes the same)."""
        kwargs: dict[str, Any] = {
            "default": os.environ.get(self.env, self.empty) if self.env else self.empty,
            "help": self.help() if callable(self.help) else self.help,
            "dest": dest or self.name,
        }
        if self.repeat:
            kwargs["action"] = "append"
        if self.switch:
            return {**kwargs, "action": "store_true"}
        if self.type is not str:
            kwargs["type"] = self.type
        for key in ("metavar", "choices"):
            if getattr(self, key) is not None:
                kwargs[key] = getattr(self, key)
        return kwargs


def _at_least(flag: str, least: float, unit: str = "") -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value is not None and value < least:
            raise ValueError(f"{flag} must be {least:g} or more{unit}, got {value}")

    return check


def _command(value: str) -> None:
    if not value.strip():
        raise ValueError(
            "--app is empty: give your app's command line or module:function (leave --app out "
            "for the reference apps)"
        )


def _image(value: str) -> None:
    if not value.strip() or any(c.isspace() for c in value.strip()):
        raise ValueError(f"--app-image {value!r} is not an image name (like team/orders:1)")


def _payload(path: Path) -> None:
    from kafka_replay.definitions.workload_table import read_payload_file

    if not path.is_file():
        raise ValueError(f"--payload {path}: no such file (give a TOML file of your messages)")
    read_payload_file(path)  # a DefinitionError names the file and field


def _expect(path: Path) -> None:
    from kafka_replay.definitions.shapes import read_expect_file

    if not path.is_file():
        raise ValueError(f"--expect {path}: no such file (give a TOML file with an [expect] table)")
    read_expect_file(path)  # a DefinitionError names the file and key


def _database_url(url: str) -> None:
    from kafka_replay.sinks.external_database import ExternalDatabase

    ExternalDatabase(url)  # a ValueError says what a URL looks like (its password hidden)


def _redacted(url: str) -> str:
    from kafka_replay.sinks.database import redact

    return redact(url)


def _directory(flag: str) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        if path.exists() and not path.is_dir():
            raise ValueError(f"{flag} {path} is a file: give a directory (it is created if new)")

    return check


def _broker_settings(items: Sequence[str]) -> None:
    from kafka_replay.cluster.broker_config import validate_overrides

    validate_overrides(_broker_settings_given(items))


def _broker_settings_given(items: Sequence[str]) -> dict[str, Any]:
    return parse_settings(items, "--broker-config")


OPTIONS: dict[str, Option] = {}


def add_run_option(option: Option) -> Option:
    """Add a run setting to every face it names; a name taken already is refused."""
    if option.name in OPTIONS:
        raise ValueError(f"run option {option.flag} is declared twice")
    OPTIONS[option.name] = option
    return option


for _option in (
    Option(
        "incidents",
        "a directory of your own incident definitions, beside the catalog and "
        "those of [tool.kafka-replay] in pyproject.toml; repeatable",
        metavar="DIR",
        repeat=True,
    ),
    Option(
        "profile",
        "only this profile (default: both)",
        choices=PROFILES,
        faces=frozenset({RUN, COMPARE}),
    ),
    Option(
        "app",
        "your app instead of the reference app: a command line (placeholders like "
        "{bootstrap} allowed) or module:function, NAME=COMMAND in a pipeline's service NAME's "
        "place; the profile picks the conditions it runs under",
        check=_command,
        engine="app",
    ),
    Option(
        "app_image",
        "your app as a container image ([NAME=]IMAGE, in a pipeline the "
        "service NAME): each instance a container on the host's network, with the contract "
        "as its environment and --app as its arguments (default: the image's command); "
        "needs Docker",
        metavar="IMAGE",
        check=_image,
        engine="app_image",
    ),
    Option(
        "payload",
        "your app's own messages in every incident's records: a TOML file "
        "with a team generator, a schema or a capture (docs/incidents.md#your-apps-messages);"
        " each workload keeps its keys, timing and pauses",
        type=Path,
        metavar="FILE",
        check=_payload,
        engine="payload",
    ),
    Option(
        "expect",
        "what your app makes of each input, where it is not once on the output:"
        " a TOML file with an [expect] table (a dead-letter topic, inputs it drops, kinds of "
        "output) and the [topics.NAME] your app writes besides the incident's "
        "(docs/service-shapes.md)",
        type=Path,
        metavar="FILE",
        check=_expect,
        engine="expect",
    ),
    Option(
        "database_url",
        "a PostgreSQL database of yours (postgresql://USER:PASSWORD@HOST/DB)"
        " for incidents whose app writes rows ([sink]): each run works in a schema of its own "
        "there and drops only that (default: $KAFKA_REPLAY_DATABASE_URL, else a server of "
        "the run's own)",
        metavar="URL",
        check=_database_url,
        shown=_redacted,
        env="KAFKA_REPLAY_DATABASE_URL",
        engine="database_url",
    ),
    Option(
        "output_id",
        "how to find the input's event_id in your app's output records: "
        "module:function(record) -> event_id",
        metavar="MODULE:FUNCTION",
        engine="output_id",
    ),
    Option(
        "guarantee",
        "the delivery guarantee your app declares (default: each incident's)",
        choices=GUARANTEES,
        engine="guarantee",
    ),
    Option(
        "group_protocol",
        "consumer group protocol the apps are told to use (default: classic)",
        choices=GROUP_PROTOCOLS,
        engine="group_protocol",
    ),
    Option(
        "restart",
        f"what happens when the app exits: {', '.join(RESTART_MODES)} (default: "
        "each incident's, usually always)",
        metavar="POLICY",
        check=parse_restart,
        engine="restart",
    ),
    Option(
        "scale",
        "N times each incident's records (and their rates and waits) for a bigger check",
        type=int,
        default=1,
        metavar="N",
        check=_at_least("--scale", 1),
    ),
    Option(
        "client_library",
        "the client release the apps run with: confluent-kafka==VERSION "
        "(Python apps; installed from PyPI once, cached; the harness keeps its own) or "
        "kafka-clients==VERSION (the JVM reference apps)",
        metavar="confluent-kafka==VERSION",
        check=parse_client,
        engine="client_library",
    ),
    Option(
        "client_config",
        "a client setting (Apache Kafka's name) over every profile's [client]; repeatable",
        metavar="KEY=VALUE",
        repeat=True,
        check=client_settings,
        engine="client",
        to_engine=client_settings,
    ),
    Option(
        "broker_config",
        "a server.properties setting over every profile's [broker]; repeatable",
        metavar="KEY=VALUE",
        repeat=True,
        check=_broker_settings,
        engine="broker",
        to_engine=_broker_settings_given,
    ),
    Option(
        "settle_timeout",
        "wait at most this long for open transactions on the output to "
        "end before the check (default: the transaction.timeout.ms the incident gives the "
        "app, 60 s if none, plus 15 s)",
        type=float,
        metavar="SECONDS",
        check=_at_least("--settle-timeout", 0, " seconds"),
        engine="settle_timeout_s",
    ),
    Option(
        "kafka_version",
        f"Apache Kafka release (default: $KAFKA_REPLAY_VERSION, else {DEFAULT_KAFKA_VERSION})",
        metavar="VERSION",
    ),
    Option("kafka_backend", backends_help, type=backend_argument, metavar="NAME"),
    Option(
        "kafka_image",
        "image for the container backend (default: a local "
        "kafka-replay/kafka:<version>, else apache/kafka:<version>, else one built on this "
        "machine)",
        metavar="IMAGE",
    ),
    Option(
        "kafka_bootstrap",
        "an existing cluster instead of brokers the harness starts (an "
        "incident that needs an essential broker setting, or more brokers, does not apply "
        "there); only uniquely prefixed topics are created and deleted (under pytest, "
        "default: $KAFKA_REPLAY_BOOTSTRAP)",
        metavar="HOST:PORT",
    ),
    Option("spark_master", "where the checker's Spark runs (default: local[2])", metavar="MASTER"),
    Option(
        "shared_spark",
        "one Spark Connect server for the whole session: every test "
        "process (pytest-xdist's workers) and every kafka-replay they start checks on it, "
        "instead of each starting a Spark driver (unless a Spark master is given)",
        switch=True,
        faces=frozenset({PYTEST}),
        child=False,
    ),
    Option(
        "jobs",
        "replay up to N runs side by side in N lanes, processes that each replay "
        "one run after another (default 1)",
        type=int,
        default=1,
        metavar="N",
        faces=frozenset({RUN, COMPARE}),
        check=_at_least("--jobs", 1),
    ),
    Option(
        "report",
        "write report.json, report.md, report.html and every run's history here",
        type=Path,
        metavar="DIR",
        faces=frozenset({RUN}),
        child=False,
        check=_directory("--report"),
    ),
    Option(
        "allow_not_applicable",
        "exit 0 when no run applied to this cluster or app (by "
        "default that is an error: a gate that tested nothing is not green)",
        switch=True,
        faces=frozenset({RUN, COMPARE}),
    ),
    Option(
        "junit",
        "write a JUnit XML file: one test case per incident and profile",
        type=Path,
        metavar="FILE",
        faces=frozenset({RUN}),
        child=False,
    ),
    Option(
        "shard",
        "replay only shard K of N: the runs (compare: the incidents; pytest: the "
        "incident items) split into N parts of about equal time, the same split on every "
        "machine; `kafka-replay report OUT --merge DIR...` joins the shards' reports",
        type=parse_shard,
        metavar="K/N",
        child=False,
    ),
    Option(
        "shard_times",
        "balance --shard by the run times of an earlier report.json (a "
        "file, or the report directory holding it) instead of the catalog's durations.json",
        type=Path,
        metavar="REPORT",
        child=False,
    ),
    Option(
        "setup",
        "replay every incident item on this setup too, e.g. 'kafka=3.9.2' or "
        "'protocol=consumer,client.max.poll.records=500' (keys as for kafka-replay compare, "
        "but bootstrap); repeatable: one item per setup, its id naming it",
        metavar="SETUP",
        repeat=True,
        faces=frozenset({PYTEST}),
        child=False,
    ),
):
    add_run_option(_option)


def options(face: str | None = None) -> list[Option]:
    """Every run option (a plugin's too), or those offered on ``face``."""
    load_plugins()
    return [o for o in OPTIONS.values() if face is None or face in o.faces]


def add_to_parser(parser: argparse.ArgumentParser, face: str, only: Iterable[str] = ()) -> None:
    """Add the options of ``face`` (or just those named in ``only``) to an argparse parser."""
    wanted = set(only)
    for option in options(face):
        if not wanted or option.name in wanted:
            parser.add_argument(option.flag, **option.argparse_kwargs())


def add_path_option(
    parser: argparse.ArgumentParser, flag: str, metavar: str, said: str, **kw: Any
) -> None:
    """A command's own option naming a file or directory (``metavar``: ``FILE`` or ``DIR``)."""
    parser.add_argument(flag, type=Path, metavar=metavar, help=said, **kw)


def add_to_pytest(group: pytest.OptionGroup) -> None:
    for option in options(PYTEST):
        group.addoption(option.pytest_flag, **option.argparse_kwargs(option.pytest_dest))


@dataclass(frozen=True)
class RunSettings:
    """What the person running the harness chose, by option name; checked when made."""

    values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, value in self.values.items():
            option = OPTIONS.get(name)
            if option is None:
                raise ValueError(f"no run option {name!r}")
            if not _given(value):
                continue
            if option.choices is not None and value not in option.choices:
                raise ValueError(
                    f"{option.flag} is one of {', '.join(option.choices)}, got {value!r}"
                )
            if option.check is not None:
                option.check(value)  # its message names the option

    def __getattr__(self, name: str) -> Any:
        if name in OPTIONS:
            return self.values.get(name, OPTIONS[name].empty)
        raise AttributeError(name)

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, face: str = RUN, only: Iterable[str] = ()
    ) -> RunSettings:
        """From the arguments of ``face``, or just those named in ``only`` (as
        :func:`add_to_parser` added them); options not taken keep their defaults."""
        wanted = set(only)
        return cls(
            {o.name: getattr(args, o.name) for o in options(face) if not wanted or o.name in wanted}
        )

    @classmethod
    def from_pytest(cls, config: pytest.Config) -> RunSettings:
        import pytest

        try:
            return cls({o.name: config.getoption(o.pytest_dest) for o in options(PYTEST)})
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None

    def replace(self, **values: Any) -> RunSettings:
        return RunSettings({**self.values, **values})

    def with_argv(self, argv: Sequence[str]) -> RunSettings:
        """These settings with ``kafka-replay run`` options over them (a setup of ``compare``):
        a repeatable option adds its items, any other replaces the value."""
        parser = argparse.ArgumentParser(prog="setup", add_help=False, exit_on_error=False)
        for option in options(RUN):
            kwargs = option.argparse_kwargs()
            kwargs.pop("choices", None)  # checked when the settings are made, like a keyword's
            parser.add_argument(option.flag, **kwargs)
        try:
            given = vars(parser.parse_args(list(argv)))
        except argparse.ArgumentError as exc:
            raise ValueError(str(exc)) from None
        values = dict(self.values)
        for option in options(RUN):
            value = given[option.name]
            if value == parser.get_default(option.name):  # not in argv (an env default is not)
                continue
            values[option.name] = [*getattr(self, option.name), *value] if option.repeat else value
        return RunSettings(values)

    def argv(self) -> list[str]:
        """The options a child ``kafka-replay run`` is given to get these settings."""
        argv: list[str] = []
        for option in options(RUN):
            value = getattr(self, option.name)
            if not option.child or option.env or not _given(value) or value == option.default:
                continue
            if option.switch:
                argv.append(option.flag)
                continue
            for item in value if option.repeat else [value]:
                argv += [option.flag, str(item)]
        return argv

    def child_environment(self) -> dict[str, str]:
        """What a child ``kafka-replay run`` is given in its environment, not in its argv."""
        given = {o.env: getattr(self, o.name) for o in options(RUN) if o.child and o.env}
        return {env: str(value) for env, value in given.items() if _given(value)}

    def to_json(self) -> dict[str, Any]:
        """Every setting with its value, as recorded in each run's ``run.json``."""
        shown = {o.name: getattr(self, o.name) for o in options()}
        for option in options():
            if option.shown is not None and shown[option.name] is not None:
                shown[option.name] = option.shown(shown[option.name])
        return {name: _plain(value) for name, value in shown.items()}

    def run_options(self) -> RunOptions:
        """What one run of the engine takes from these settings: each option's value whose
        declaration names its ``engine`` field, as it says to give it."""
        from kafka_replay.playing.run_options import RunOptions

        given = {
            option.engine: (option.to_engine or _as_chosen)(getattr(self, option.name))
            for option in options()
            if option.engine
        }
        return RunOptions(**given, settings=self.to_json())

    def session(self, work_dir: Path, runs_dir: Path | None = None, **kw: int) -> CatalogSession:
        """Brokers and Spark for runs one after the other, as these settings ask."""
        from kafka_replay.playing.session import CatalogSession

        return CatalogSession(
            work_dir,
            self.kafka_version,
            self.kafka_backend,
            image=self.kafka_image,
            bootstrap_servers=self.kafka_bootstrap,
            spark_master=self.spark_master,
            runs_dir=runs_dir,
            **kw,
        )


def _as_chosen(value: Any) -> Any:
    return value


def _given(value: Any) -> bool:
    """Whether an option was given: not its absence (None, no items, a switch left off); a 0
    is given (``0 in (None, False)`` would say otherwise)."""
    return not (value is None or value is False or (isinstance(value, list) and not value))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)
