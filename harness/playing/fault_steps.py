"""The steps that name a fault and say when: signals to the app, more partitions, broker
kills, pauses and restarts, network and request faults, aborting a hanging transaction.

Each is a ``@step_kind`` that checks its fields and hands the work to :mod:`kafka_replay.faults`,
where the faults' mechanics live; a fault that could not be done fails its step, saying why.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kafka_replay.cluster.log_end import LogEndError
from kafka_replay.definitions.model import Step
from kafka_replay.definitions.vocabulary import (
    REQUIRED,
    Field,
    NeedsByField,
    StepContext,
    step_kind,
)
from kafka_replay.faults import (
    ACTIONS,
    CLIENTS,
    DIRECTIONS,
    FAULTS,
    NETWORK_ROLES,
    ROLES,
    BrokerFaultError,
    abort_hanging,
    add_partitions,
    group_offsets_holders,
    kill_at_random,
    toxic_attributes,
)

from .idle_apps import idle_apps
from .stage import APP, Stage, StepFailed

SIGNALS = ("SIGKILL", "SIGTERM", "SIGSTOP", "SIGCONT", "SIGINT")
#: The requests only a broker with transactions answers: a fault aimed at one needs such a broker.
TRANSACTION_APIS = ("AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn")


def _gap(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    gap = options["gap_s"]
    if len(gap) != 2 or not all(isinstance(g, (int, float)) for g in gap) or gap[0] > gap[1]:
        return "gap_s", "must be [shortest, longest] seconds"
    return None


@step_kind(
    "kill_at_random",
    _gap,
    times=Field(int),
    gap_s=Field(list),
    instance=Field(int, 0),
    signal=Field(str, "SIGKILL", SIGNALS),
    background=Field(bool, True),
    app=APP,
    part=Field(str, ""),
)
def _kill_at_random(stage: Stage, step: Step) -> dict[str, Any]:
    """Send a signal (SIGKILL by default) at random intervals; the supervisor restarts the app
    (or the app its ``part``)."""

    def kill() -> int:
        return kill_at_random(
            stage.app(step["app"]),
            stage.rng,
            step["times"],
            tuple(step["gap_s"]),
            stage.stop,
            instance=step["instance"],
            sig=signal.Signals[step["signal"]],
            part=step["part"],
        )

    if step["background"]:
        stage.in_background("kill-at-random", kill)
        return {}
    return {"sent": kill()}


@step_kind(
    "add_partitions",
    needs="create_partitions",
    topic=Field(str, "input"),
    count=Field(int),
)
def _add_partitions(stage: Stage, step: Step) -> dict[str, Any]:
    """Raise the topic's partition count; records the topic and its count before."""
    topic = stage.topics[step["topic"]]
    before = add_partitions(stage.cluster, topic, step["count"])
    return {"partitions": step["count"], "before": before, "topic": topic}


def _broker_target(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """``role = "leader"`` or ``"follower"`` needs a topic the incident has and one of its
    partitions."""
    if options["role"] not in ("leader", "follower"):
        return None
    return partition_named(options, context)


def partition_named(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """The step's ``topic`` is one the incident has, and ``partition`` one of its partitions."""
    topic, partition = options["topic"], options["partition"]
    count = context.partitions.get(topic, 0)
    if not count:
        having = ", ".join(role for role, n in context.partitions.items() if n)
        return "topic", f"the incident has no {topic} topic; allowed: {having}"
    if not 0 <= partition < count:
        return "partition", (
            f"partition {partition} is not in the {topic} topic ({count} partitions); "
            f"allowed: 0 to {count - 1}"
        )
    return None


def _sparing_target(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """A broker that kills or freezes can spare the group's offsets, unless it is the controller."""
    if options["spare_group_offsets"] and options["role"] == "controller":
        return (
            "spare_group_offsets",
            "the active controller is one node; allowed with leader, follower or any",
        )
    return _broker_target(options, context)


def _pause_target(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    if options["seconds"] <= 0:
        return "seconds", f"must be more than 0, got {options['seconds']}"
    return _sparing_target(options, context)


def node_named(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """A step's ``node``, when given, is a node id (1 to ``brokers``)."""
    if options["node"] is not None and options["node"] < 1:
        return "node", f"node ids start at 1, got {options['node']}; allowed: 1 to brokers"
    return None


def _rolling(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    if options["between_s"] < 0:
        return "between_s", f"must be 0 or more seconds, got {options['between_s']}"
    return None


@contextlib.contextmanager
def refused() -> Iterator[None]:
    """A broker fault that could not be done fails its step, saying why."""
    try:
        yield
    except (BrokerFaultError, LogEndError, ValueError) as exc:
        raise StepFailed(str(exc)) from exc


#: A partition of one of the run's topics, by the topic's name (or its role's) and number.
PARTITION = {"topic": Field(str, "input"), "partition": Field(int, 0)}
#: How a broker fault names its broker: by role, and for a leader or follower, which partition's.
BROKER_TARGET = {"role": Field(str, "leader", ROLES), **PARTITION}
#: A broker fault that kills or freezes: never a broker holding the group's offsets, when
#: asked, so that the app's commits keep working through it.
SPARING = {"spare_group_offsets": Field(bool, False)}


def _spared(stage: Stage, step: Step) -> set[int]:
    """The nodes a broker fault must not hit: those holding the group's offsets, if asked."""
    if not step["spare_group_offsets"]:
        return set()
    cluster = stage.brokers().cluster
    return {node for group in stage.groups for node in group_offsets_holders(cluster, group)}


@step_kind(
    "kill_broker",
    _sparing_target,
    needs="restart_brokers",
    **BROKER_TARGET,
    **SPARING,
    unreplicated=Field(int, 0),
    timeout_s=Field((int, float), 60.0),
)
def _kill_broker(stage: Stage, step: Step) -> dict[str, Any]:
    """SIGKILL one broker (a partition's leader or follower, the controller or any); wait for a
    new leader.

    With ``unreplicated``, a leader is killed once that many records of its partition are in its
    log and not in the follower Kafka will elect in its place, frozen first so that no fetch
    brings them there: a crash then loses what an ``acks=1`` producer (the workload's or the
    app's) was told is written, which a kill at any moment misses when it lands just after the
    followers' fetch (or while the writer is between batches).
    """
    found: dict[str, Any] = {}

    def unreplicated(node: int) -> None:
        found["unreplicated_at_kill"] = stage.brokers().freeze_unreplicated(
            node, step["topic"], step["partition"], step["unreplicated"], stage.check
        )

    with refused():
        killed = stage.brokers().kill(
            step["role"],
            step["topic"],
            step["partition"],
            step["timeout_s"],
            _spared(stage, step),
            when=unreplicated if step["unreplicated"] else None,
        )
    return {**found, **killed}


@step_kind(
    "restart_broker",
    node_named,
    needs="restart_brokers",
    node=Field(int, None),
    which=Field(str, "last", ("last", "first")),
    timeout_s=Field((int, float), 120.0),
)
def _restart_broker(stage: Stage, step: Step) -> dict[str, Any]:
    """Start a killed broker again with its config and data; wait until it serves."""
    with refused():
        first = step["which"] == "first"
        return stage.brokers().restart(step["node"], step["timeout_s"], first=first)


@step_kind(
    "pause_broker",
    _pause_target,
    needs="pause_brokers",
    **BROKER_TARGET,
    **SPARING,
    seconds=Field((int, float)),
    background=Field(bool, False),
)
def _pause_broker(stage: Stage, step: Step) -> dict[str, Any]:
    """Freeze one broker (SIGSTOP) for that long, then resume it (SIGCONT): a long GC pause."""
    with refused():
        faults = stage.brokers()
        node, found = faults.pause(
            step["role"], step["topic"], step["partition"], _spared(stage, step)
        )
    if not step["background"]:
        with refused():
            return {**found, **faults.hold(node, step["seconds"])}

    def hold() -> None:
        ended = faults.hold(node, step["seconds"])
        stage.history.stream("steps").append(
            {
                "kind": "resumed",
                "do": "pause_broker",
                "label": None,
                "started": found["paused"],
                "ended": ended["resumed"],
                **found,
                **ended,
            }
        )

    stage.in_background(f"pause-broker-{node}", hold)
    return {**found, "background": True}


@step_kind(
    "rolling_restart",
    _rolling,
    needs="restart_brokers",
    between_s=Field((int, float), 0.0),
    timeout_s=Field((int, float), 120.0),
)
def _rolling_restart(stage: Stage, step: Step) -> dict[str, Any]:
    """Restart every broker in turn (SIGTERM, start, wait until it serves and is in sync)."""
    with refused():
        return stage.brokers().rolling_restart(step["between_s"], step["timeout_s"])


def _network_fault(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """Each fault's own fields must make sense; a repeated fault must end to repeat."""
    fault = options["fault"]
    needs = {"latency": "latency_ms", "bandwidth": "rate_kb_s"}.get(fault)
    if needs and not (options[needs] or 0) > 0:
        return needs, f"a {fault} fault needs {needs} above 0"
    jitter, latency = options["jitter_ms"], options["latency_ms"]
    if not 0 <= jitter <= latency:
        return "jitter_ms", f"must be 0 to latency_ms ({latency}), got {jitter}"
    if options["reset_after_ms"] < 0:
        return "reset_after_ms", f"must be 0 or more, got {options['reset_after_ms']}"
    if fault == "cut_off" and options["direction"] != "both":
        return "direction", 'a cut_off closes the broker\'s connections both ways; use "both"'
    if options["seconds"] is not None and options["seconds"] <= 0:
        return "seconds", f"must be more than 0, got {options['seconds']}"
    if options["times"] < 1:
        return "times", f"must be 1 or more, got {options['times']}"
    if options["times"] > 1 and options["seconds"] is None:
        return "times", "a fault repeated more than once needs seconds (how long each lasts)"
    if options["gap_s"] != [0, 0] and (problem := _gap(options, context)) is not None:
        return problem
    return _broker_target(options, context)


@step_kind(
    "network_fault",
    _network_fault,
    fault=Field(str, REQUIRED, tuple(FAULTS)),
    role=Field(str, "leader", NETWORK_ROLES),
    topic=Field(str, "input"),
    partition=Field(int, 0),
    direction=Field(str, "both", DIRECTIONS),
    latency_ms=Field((int, float), 0),
    jitter_ms=Field((int, float), 0),
    rate_kb_s=Field(int, None),
    reset_after_ms=Field(int, 0),
    seconds=Field((int, float), None),
    times=Field(int, 1),
    gap_s=Field(list, [0, 0]),
    background=Field(bool, False),
    label=Field(str, None),
)
def _network(stage: Stage, step: Step) -> dict[str, Any]:
    """A network fault between the clients and one broker (or all) through its proxy."""
    faults = stage.network()
    target = {name: step[name] for name in BROKER_TARGET}

    def play() -> dict[str, Any]:
        with refused():
            return faults.play(
                step["fault"],
                target,
                step["direction"],
                toxic_attributes(step["fault"], step.options),
                step["seconds"],
                step["times"],
                tuple(step["gap_s"]),
            )

    if not step["background"]:
        return play()

    def in_background() -> None:
        started = time.time()
        found = play()
        stage.history.stream("steps").append(
            {
                "kind": "ended",
                "do": "network_fault",
                "label": step["label"],
                "started": started,
                "ended": time.time(),
                **found,
            }
        )

    stage.in_background(f"network-{step['fault']}", in_background)
    return {"fault": step["fault"], "background": True}


def _kafka_fault(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """The API must be Kafka's; a delay needs its milliseconds; counts start at 1."""
    from kafka_replay.cluster.kafka_answers import ERROR_APIS, AnswerError, error_code
    from kafka_replay.cluster.kafka_wire import api_keys

    if options["api"] not in api_keys():
        return "api", (
            f"{options['api']!r} is not an API of the Kafka protocol; e.g. Produce, Fetch, "
            "OffsetCommit, JoinGroup, Heartbeat, FindCoordinator, InitProducerId, EndTxn"
        )
    if options["action"] == "delay" and not options["delay_ms"] > 0:
        return "delay_ms", "a delay needs delay_ms above 0"
    if (options["action"] == "error") != (options["error"] is not None):
        return "error", 'an error answer (action = "error") and its error go together'
    if options["error"] is not None:
        if options["api"] not in ERROR_APIS:
            return "api", f"an error answer is built for {', '.join(ERROR_APIS)} only"
        try:
            error_code(options["error"])
        except AnswerError as exc:
            return "error", str(exc)
    for name in ("nth", "every", "count"):
        if options[name] < 1:
            return name, f"must be 1 or more, got {options[name]}"
    if options["action"] == "kill_sender" and options["clients"] != "app":
        return "clients", 'the sender killed is an app\'s: kill_sender needs clients = "app"'
    return _broker_target(options, context)


def _kill_sender(stage: Stage) -> Callable[[int], dict[str, Any]]:
    """What kills the app instance whose client sent a request from a port: SIGKILL to its
    process group, restarted by its supervisor like any crash. A sender already gone (killed
    for a request before, which was still in flight) is left so. An instance that cannot be
    looked into (a container) is found only when it is the one running."""

    def kill(port: int) -> dict[str, Any]:
        services = stage.services
        holding = [
            (n, i) for n, apps in services.items() if (i := apps.instance_holding(port)) is not None
        ]
        if not holding and all(apps.spec.image is None for apps in services.values()):
            return {"port": port, "gone": True}  # every process was looked into
        running = [(n, i) for n, apps in services.items() for i in apps.running()]
        if not holding and len(running) != 1:
            raise BrokerFaultError(
                f"no app instance holds the connection from port {port} that sent the "
                f"request ({len(running)} containers running)"
            )
        name, instance = (holding or running)[0]
        with contextlib.suppress(RuntimeError):  # it died on its own meanwhile
            services[name].signal(instance, signal.SIGKILL)
        return {"app": name, "instance": instance, "port": port}

    return kill


@step_kind(
    "kafka_fault",
    _kafka_fault,
    needs=NeedsByField("api", dict.fromkeys(TRANSACTION_APIS, "transactions")),
    api=Field(str),
    action=Field(str, REQUIRED, ACTIONS),
    clients=Field(str, "all", tuple(CLIENTS)),
    role=Field(str, "all", NETWORK_ROLES),
    topic=Field(str, "input"),
    partition=Field(int, 0),
    nth=Field(int, 1),
    every=Field(int, 1),
    count=Field(int, 1),
    delay_ms=Field(int, 0),
    error=Field(str, None),
    timeout_s=Field((int, float), 60.0),
    label=Field(str, None),
)
def _request_fault(stage: Stage, step: Step) -> dict[str, Any]:
    """A fault aimed at Kafka requests (an API's, from the app or the workload producer):
    their answer lost after the broker acted, an error answer the broker never sent, a delay,
    a cut, or the app instance that sent it killed before it is answered; waits until it acted
    ``count`` times."""
    target = {name: step[name] for name in BROKER_TARGET}
    with refused():
        try:
            return stage.network().play_request_fault(
                target, dict(step.options), step["timeout_s"], kill_sender=_kill_sender(stage)
            )
        except BrokerFaultError as exc:  # an app given no partition sends no group requests
            idle = None if step["clients"] == "workload" else idle_apps(stage.history, time.time())
            if idle is None:
                raise
            raise BrokerFaultError(f"{exc}; meanwhile {idle}") from exc


@step_kind(
    "abort_transactions",
    needs="transaction_admin",
    topic=Field(str, "output"),
    idle_s=Field((int, float), 5.0),
    timeout_s=Field((int, float), 30.0),
    label=Field(str, None),
)
def _abort_transactions(stage: Stage, step: Step) -> dict[str, Any]:
    """An operator's way out of a hanging transaction (``kafka-transactions.sh abort``).

    Aborts the open transactions on the topic's held partitions whose producer wrote nothing
    for ``idle_s`` (a live app's transaction is left alone), then waits until each held
    partition's last stable offset moves past where it stood.
    """
    return abort_hanging(
        stage.cluster,
        stage.topics[step["topic"]],
        step["idle_s"],
        lambda unblocked: stage.until(unblocked, step["timeout_s"]),
    )


@step_kind("heal_network", label=Field(str, None))
def _heal_network(stage: Stage, step: Step) -> dict[str, Any]:
    """End every network fault still active (each proxy passes traffic untouched again)."""
    with refused():
        return {"healed": stage.network().heal()}
