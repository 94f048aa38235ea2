"""What an incident definition says, once read and checked: plain, frozen data."""

from __future__ import annotations

import operator
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_replay.workload import Workload

PROFILES = ("vulnerable", "remediated")
#: Steps that act on the proxies in front of the brokers: their cluster needs proxies.
NETWORK_STEPS = frozenset({"network_fault", "heal_network", "kafka_fault"})
GROUP_PROTOCOLS = ("classic", "consumer")
#: What a topic is to the app (``[topics.NAME] role``): read by it, or one of its results.
TOPIC_ROLES = ("input", "output", "dead_letter", "side_effects", "internal")
#: The roles of the topics an app writes: a transaction it leaves open holds their readers.
WRITTEN_ROLES = ("output", "dead_letter", "side_effects", "internal")

#: ``[group] type``: a consumer group (classic or KIP-848, committed offsets) or a share group
#: (KIP-932: records acquired, acknowledged one by one, no committed offsets).
GROUP_TYPES = ("consumer", "share")
#: The cluster capability (``kafka_replay.cluster.capabilities``) a group type needs.
GROUP_TYPE_NEEDS = {"share": "share_groups"}
#: What a broker setting does for an incident (``[broker_needs]``): on a cluster that cannot
#: take it, an ``essential`` setting makes the run not applicable; the others are gone without.
SETTING_NEEDS = {
    "essential": "the incident is this setting's effect: without it there is no incident",
    "time": "it compresses time: without it the same thing happens, later",
    "limit": "it relaxes a limit of the broker's so the compressed client settings are allowed",
}

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}


class DefinitionError(ValueError):
    """A definition that cannot run: names the file, the field and what is allowed."""

    def __init__(self, source: Path | str, where: str, problem: str) -> None:
        super().__init__(f"{source}: {where}: {problem}")
        self.source, self.where, self.problem = str(source), where, problem


_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")


def toml_error(text: str, exc: tomllib.TOMLDecodeError) -> tuple[str, str]:
    """Where a TOML syntax error is (``line L, column C``) and what it is, as a fix to make."""
    message = str(exc)
    match = _TOML_POSITION.search(message)
    if match is None:
        return "(file)", f"not valid TOML: {message}"
    problem = message[: match.start()]
    if match.group(1):
        where = f"line {match.group(1)}, column {match.group(2)}"
    else:  # the file ended inside a value or a table: name its last line
        where = f"line {max(1, len(text.rstrip().splitlines()))} (the end of the file)"
        problem += " (the file ends before it is closed)"
    return where, f"not valid TOML: {problem}; fix the syntax there"


def topic_names(topics: Iterable[str], roles: Mapping[str, str]) -> dict[str, str]:
    """Each name a definition or step may use for a topic, and the topic it means: its own,
    and the role of the first topic of each role (``input`` for the first input topic)
    where no topic has that name."""
    names = {name: name for name in topics}
    for name in list(names):
        names.setdefault(roles[name], name)
    return names


@dataclass(frozen=True)
class Condition:
    """``symptom OP value``, e.g. ``rejected_commits >= 1`` or ``backlog_drained == false``."""

    symptom: str
    op: str
    value: float | bool

    def holds(self, measured: Any) -> bool | None:
        """Whether the measured value meets it; None when the symptom could not be measured."""
        if measured is None:
            return None
        if isinstance(self.value, bool) != isinstance(measured, bool):
            return False
        return bool(COMPARISONS[self.op](measured, self.value))

    def __str__(self) -> str:
        value = str(self.value).lower() if isinstance(self.value, bool) else f"{self.value:g}"
        return f"{self.symptom} {self.op} {value}"


@dataclass(frozen=True)
class SettingNeed:
    """Why an incident sets a broker setting: ``essential``, ``time`` or ``limit``, and how."""

    kind: str
    why: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.why}"


#: A broker setting the definition does not explain is taken as essential: a cluster that
#: cannot take it makes the run not applicable, rather than silently different.
UNEXPLAINED = SettingNeed("essential", "the definition does not say why it sets it")


@dataclass(frozen=True)
class Step:
    do: str
    options: Mapping[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.options[name]


@dataclass(frozen=True)
class AppDefinition:
    command: str
    instances: int = 1
    restart_delay_s: float = 0.5
    restart: str = (
        "always"  # always, on-failure or every:SECONDS (see kafka_replay.apps.RestartPolicy)
    )
    jvm: str | None = None  # the JVM reference app: ``{java} Class --flags`` (see jvm_apps)
    #: A container image the app runs from (``command``: its arguments; see apps.image_app).
    image: str | None = None
    #: A service of a pipeline (``[apps.NAME]``): the topics it reads and writes, by their
    #: names in the definition, and its own client settings over the profile's ``[client]``.
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    client: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mirror:
    """``[mirror]``: a second cluster that MirrorMaker 2 copies the run's input topics and its
    groups' offsets to, for a ``fail_over`` step to move the app onto.

    ``interval_s`` compresses MirrorMaker 2's checkpoint, offset-sync and refresh intervals
    (60, 60 and 600 s by default); ``offset_lag_max`` is how far a partition's copy may run
    ahead of its last offset sync (MirrorMaker 2's ``offset.lag.max``, 100 by default): the
    coarser the syncs, the further back a translated offset lands.
    """

    interval_s: float = 2.0
    offset_lag_max: int = 100


@dataclass(frozen=True)
class Sink:
    """``[sink]``: the database table the app writes its results to, instead of a topic.

    The run gets a database with ``tables`` created before the app starts; the checker
    accounts for every acknowledged input against the rows of ``table`` (or what ``query``
    returns), each row naming its input in ``id_column``. With ``effect_column``, an input's
    effect is the sum of that column over its rows, and more than ``effect_each`` (what one
    application adds; default: its first row's value) is the effect applied again. With
    ``time_column`` (a timestamp the rows carry), a row's time is when it was written: the
    report draws rows written per second. With ``key_column``, the table is the service's
    state, a row per key: it is judged by each key's last input (its value held, or the key
    gone where that input deleted it), not by every input.
    """

    tables: str
    table: str | None = None
    query: str | None = None
    id_column: str = "event_id"
    effect_column: str | None = None
    effect_each: float | None = None
    time_column: str | None = None
    key_column: str | None = None

    @property
    def relation(self) -> str:
        """What the checker reads: the table, or the query as a derived table."""
        return self.table if self.table is not None else f"({self.query}) AS sink"


@dataclass(frozen=True)
class FanOut:
    """``[expect.fan_out]``: every input gives one record of each kind on ``topic``; a record's
    kind is what ``kind_of(record)`` returns (``module:function`` over an output record)."""

    topic: str
    kinds: tuple[str, ...]
    kind_of: str


@dataclass(frozen=True)
class Expectations:
    """``[expect]``: where a correct service puts each input.

    An input the workload marks (``Payload(expect=...)``), or that the predicate ``bad`` or
    ``filtered`` (``module:function(record) -> bool`` over an input record) names, belongs in
    the ``dead_letter`` topic or nowhere; the others once in each output topic (once per
    kind on a fan-out's topic).
    """

    dead_letter: str | None = None  # the topic's name in the definition
    bad: str | None = None
    filtered: str | None = None
    fan_out: FanOut | None = None

    @property
    def predicates(self) -> dict[str, str]:
        """Each predicate, by the place it puts an input in."""
        chosen = {"dead_letter": self.bad, "filtered": self.filtered}
        return {place: spec for place, spec in chosen.items() if spec}


@dataclass(frozen=True)
class Profile:
    """The conditions of one profile: everything a run needs, profile overrides applied."""

    name: str
    description: str
    broker: Mapping[str, Any]
    client: Mapping[str, Any]
    producer: Mapping[str, Any]
    app: AppDefinition
    workloads: Mapping[str, Workload]
    sink: Sink | None = None
    #: A pipeline's services (``[apps.NAME]``), upstream first; empty in the one-app form.
    #: ``app`` is then the first of them.
    apps: Mapping[str, AppDefinition] = field(default_factory=dict)
    #: ``[topic_config.NAME]``: Kafka topic configs each topic is created with, by its name in
    #: the definition (``retention.ms``, ``message.timestamp.type``); a profile's over the top's.
    topic_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def compacted(self, topic: str) -> bool:
        """Whether the topic (by its name in the definition) is created compacted
        (``cleanup.policy`` ``compact`` or ``compact,delete``)."""
        policy = str(self.topic_config.get(topic, {}).get("cleanup.policy", ""))
        return "compact" in policy.split(",")

    @property
    def services(self) -> dict[str, AppDefinition]:
        """Every app the run starts, by name (the one-app form's is ``app``), upstream first."""
        return dict(self.apps) if self.apps else {"app": self.app}


@dataclass(frozen=True)
class YourApp:
    """``[your_app]``: what the incident tests when a team's app (``--app``) replaces the
    reference app, and what changes for it so it is judged on what its own clients did."""

    tests: str  # which client the incident puts under the fault, in words
    applies: bool = True  # False: the failure is none of the app's clients' (not applicable)
    #: The incident's steps as a team's app meets them: ``[your_app.steps]`` sets fields anew
    #: per step kind (``kill_broker.topic = "output"``); empty: the incident's own.
    steps: tuple[Step, ...] = ()
    #: Client settings of the profiles a team's app is not given (its own producer decides).
    without_client: tuple[str, ...] = ()
    #: Workload producer settings over the profile's, so only the app's clients can fail.
    producer: Mapping[str, Any] = field(default_factory=dict)
    #: The signature a team's app is judged on (default: the incident's).
    signature: tuple[Condition, ...] = ()
    #: Nodes for a team's app (default: the incident's), so a fault can reach its writes alone.
    brokers: int | None = None


@dataclass(frozen=True)
class Incident:
    name: str
    title: str
    post: str
    guarantee: str
    time_scale: str
    #: Every topic by its name in the definition: its partitions (see :attr:`roles`).
    topics: Mapping[str, int]
    steps: tuple[Step, ...]
    conditions: tuple[Condition, ...]
    signature: tuple[Condition, ...]
    profiles: Mapping[str, Profile]
    source: Path
    seed: int = 0
    #: Nodes in the incident's cluster; its topics get a replication factor of up to 3.
    brokers: int = 1
    symptoms: tuple[str, ...] = field(default=())  # every symptom reported, signature first
    #: How far each symptom may move between two setups before a comparison calls it drift
    #: (a relative change: 0.5 is 50 %); a symptom not named gets ``DEFAULT_DRIFT``.
    drift: Mapping[str, float] = field(default_factory=dict)
    #: ``[broker_needs]``: why each broker setting is there (see :data:`SETTING_NEEDS`).
    broker_needs: Mapping[str, SettingNeed] = field(default_factory=dict)
    #: ``[your_app]``: how the incident tests a team's app (None: as the reference app).
    your_app: YourApp | None = None
    #: ``[group] type``: ``consumer`` (the default) or ``share`` (see :data:`GROUP_TYPES`).
    group_type: str = "consumer"
    #: Each topic's role (:data:`TOPIC_ROLES`), by name; a name missing here is its own role
    #: (the short form ``input = 3``).
    roles: Mapping[str, str] = field(default_factory=dict)
    #: ``[expect]``: what a correct service makes of each input (default: once on the output).
    expect: Expectations = field(default_factory=Expectations)
    #: ``[mirror]``: the cluster a ``fail_over`` step moves the app to (None: one cluster).
    mirror: Mirror | None = None
    #: ``[topics.NAME] replicas``: the topics whose replication factor is not the incident's
    #: ``min(3, brokers)``, by name.
    replicas: Mapping[str, int] = field(default_factory=dict)
    #: ``[features]``: feature levels the cluster is formatted with (``transaction.version``),
    #: by name, over the release's own.
    features: Mapping[str, int] = field(default_factory=dict)

    def role(self, name: str) -> str:
        return self.roles.get(name, name)

    def named(self, role: str) -> list[str]:
        """The topics of a role, in the definition's order."""
        return [name for name in self.topics if self.role(name) == role]

    def topic_names(self) -> dict[str, str]:
        """Each name a definition or step may use for a topic (see :func:`topic_names`)."""
        return topic_names(self.topics, {name: self.role(name) for name in self.topics})

    def need(self, setting: str) -> SettingNeed:
        """Why the incident sets this broker setting (unexplained ones count as essential)."""
        return self.broker_needs.get(setting, UNEXPLAINED)

    def for_your_app(self) -> Incident:
        """The incident as it tests a team's app (``--app``): ``[your_app]``'s steps, signature
        and brokers; its profiles without the client settings the app's own producer decides,
        and with the workload producer's own settings."""
        mine = self.your_app
        if mine is None:
            return self
        profiles = {
            name: replace(
                profile,
                client={k: v for k, v in profile.client.items() if k not in mine.without_client},
                producer={**profile.producer, **mine.producer},
            )
            for name, profile in self.profiles.items()
        }
        return replace(
            self,
            steps=mine.steps or self.steps,
            signature=mine.signature or self.signature,
            brokers=mine.brokers or self.brokers,
            profiles=profiles,
        )

    @property
    def network_faults(self) -> bool:
        """Whether a step acts on the network, so clients must reach brokers through proxies."""
        return any(step.do in NETWORK_STEPS for step in self.steps)
