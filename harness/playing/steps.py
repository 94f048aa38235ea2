"""The steps of an incident's scenario, each done to the real cluster and the real app.

Every step kind is one function registered with ``@step_kind``, which declares the fields a
definition may give it (:mod:`kafka_replay.definitions.vocabulary`); the definition reader,
the runner and the docs all take the list of steps from its ``STEPS``. A :class:`Stage` holds
what the steps act on. Every step is recorded in the run history's ``steps`` stream with when
it started and ended and what it found, so symptoms can look at what happened during a given
step (the quiet period, the redeploy).
"""

from __future__ import annotations

import contextlib
import logging
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kafka_replay.apps import Supervisor
from kafka_replay.apps.client_config import check_client_config
from kafka_replay.cluster import Cluster
from kafka_replay.cluster.log_end import LogEndError, log_end_offsets
from kafka_replay.definitions.model import Profile, Step
from kafka_replay.definitions.vocabulary import REQUIRED, STEPS, Field, StepContext, step_kind
from kafka_replay.faults import (
    ACTIONS,
    CLIENTS,
    DIRECTIONS,
    FAULTS,
    NETWORK_ROLES,
    ROLES,
    BrokerFaultError,
    BrokerFaults,
    RequestFaults,
    abort_transactions,
    add_partitions,
    group_offsets_holders,
    kill_at_random,
    led_partition,
    next_leader,
    toxic_attributes,
)
from kafka_replay.history import RunHistory, sample_lag
from kafka_replay.history.consumer_offsets import group_reader
from kafka_replay.history.stable_offsets import held, stable_ends
from kafka_replay.workload import Workload, WorkloadProducer
from kafka_replay.workload.payloads import PayloadError

from .idle_apps import idle_apps

log = logging.getLogger(__name__)

POLL_S = 0.2
#: A follower's fetch moves the high watermark every 500 ms: looked at far more often.
UNREPLICATED_POLL_S = 0.01


class StepFailed(RuntimeError):
    """A step could not do what the scenario needs (the app never came up, a wait timed out)."""


@dataclass
class Stage:
    """What a scenario's steps act on."""

    cluster: Cluster
    history: RunHistory
    profile: Profile
    topics: dict[str, str]
    group: str
    apps: Supervisor
    rng: random.Random
    stop: threading.Event = field(default_factory=threading.Event)
    background: list[threading.Thread] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    acks: int = 0
    paused: bool = False
    #: Created by the first broker fault: the nodes it took down, restored at the end.
    broker_faults: BrokerFaults | None = None
    #: Created by the first network fault: the faults still active, healed at the end.
    network_faults: RequestFaults | None = None
    #: A share group's watch (``[group] type = "share"``): the drain reads its start offsets.
    share_watch: Any = None
    #: The app's input topics (default: the ``input`` topic), as created.
    input_topics: tuple[str, ...] = ()
    #: Every app by its service's name (``app`` in the one-app form), upstream first.
    services: dict[str, Supervisor] = field(default_factory=dict)
    #: What each group reads (the topics as created), by group: the drain waits for each.
    reads: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.input_topics or (self.topics["input"],)

    def app(self, name: str | None) -> Supervisor:
        """The supervisor of service ``name``; None: the one app (a pipeline's first)."""
        if name is None or not self.services:
            return self.apps
        return self.services[name]

    @property
    def groups(self) -> dict[str, tuple[str, ...]]:
        """Each group and what it reads: the one app's group on the inputs by default."""
        return self.reads or {self.group: self.inputs}

    def topic_of(self, workload: Workload) -> str:
        """The topic a workload is written to: the one it names, else the first input."""
        return self.topics[workload.topic or "input"]

    def brokers(self) -> BrokerFaults:
        """The run's broker faults (refused, saying why, on a cluster the harness does not run)."""
        if self.broker_faults is None:
            try:
                self.broker_faults = BrokerFaults(self.cluster, self.topics, self.rng, self.stop)
            except BrokerFaultError as exc:
                raise StepFailed(str(exc)) from exc
        return self.broker_faults

    def network(self) -> RequestFaults:
        """The run's network and request faults (refused, saying why, on a cluster without
        proxies)."""
        if self.network_faults is None:
            try:
                self.network_faults = RequestFaults(self.cluster, self.topics, self.rng, self.stop)
            except BrokerFaultError as exc:
                raise StepFailed(str(exc)) from exc
        return self.network_faults

    def in_background(self, name: str, target: Callable[[], Any]) -> None:
        def guarded() -> None:
            try:
                target()
            except BaseException as exc:  # surfaced by the next step
                self.errors.append(exc)
                self.stop.set()

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        thread.start()
        self.background.append(thread)

    def check(self) -> None:
        """Raise what a background step or the app supervisor ran into."""
        if self.errors:
            raise StepFailed(f"a background step failed: {self.errors[0]}") from self.errors[0]
        self.apps.check()

    def wait(self, seconds: float) -> None:
        """Let scenario time pass (an idle period), still noticing failures."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.check()
            self.stop.wait(min(left, POLL_S))

    def until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait for ``condition``; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while not condition():
            self.check()
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)
        return True

    def on_produce_event(
        self, sink: Callable[[dict[str, Any]], None]
    ) -> Callable[[dict[str, Any]], None]:
        def record(event: dict[str, Any]) -> None:
            sink(event)
            with self._lock:
                if event["kind"] == "ack":
                    self.acks += 1
                elif event["kind"] == "pause":
                    self.paused = True
                elif event["kind"] == "resume":
                    self.paused = False

        return record


SIGNALS = ("SIGKILL", "SIGTERM", "SIGSTOP", "SIGCONT", "SIGINT")


def _known_workload(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    if options["workload"] not in context.workloads:
        defined = ", ".join(sorted(context.workloads))
        return "workload", f"no workload {options['workload']!r}; defined: {defined}"
    return None


def _gap(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    gap = options["gap_s"]
    if len(gap) != 2 or not all(isinstance(g, (int, float)) for g in gap) or gap[0] > gap[1]:
        return "gap_s", "must be [shortest, longest] seconds"
    return None


@step_kind("produce", _known_workload, workload=Field(str), background=Field(bool, False))
def _produce(stage: Stage, step: Step) -> dict[str, Any]:
    """Produce a workload to the input topic, recording every ack."""
    workload: Workload = stage.profile.workloads[step["workload"]]
    producer = WorkloadProducer(
        stage.cluster.client_bootstrap_servers,
        stage.topic_of(workload),
        stage.on_produce_event(stage.history.stream("produce")),
        config=dict(stage.profile.producer),
    )
    if step["background"]:
        stage.in_background(f"produce-{workload.name}", lambda: producer.run(workload, stage.stop))
        return {"workload": workload.name}
    try:
        stats = producer.run(workload, stage.stop)
    except PayloadError as exc:  # a team's generator, named with the record it failed at
        raise StepFailed(str(exc)) from exc
    timing = {"seconds": round(stats.seconds, 2), **(stats.lateness() or {})}
    return {"workload": workload.name, "sent": stats.sent, **timing}


@step_kind("wait_produced")
def _wait_produced(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until background workloads finish."""
    for thread in stage.background:
        while thread.name.startswith("produce-") and thread.is_alive():
            stage.check()
            thread.join(POLL_S)
    stage.check()
    return {"acks": stage.acks}


@step_kind("wait_paused", timeout_s=Field((int, float), 60.0))
def _wait_paused(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until a background workload reaches a pause."""
    if not stage.until(lambda: stage.paused, step["timeout_s"]):
        raise StepFailed(f"the workload did not pause within {step['timeout_s']}s")
    return {"acks": stage.acks}


@step_kind("wait_acks", count=Field(int), timeout_s=Field((int, float), 60.0))
def _wait_acks(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until that many records were acknowledged."""
    if not stage.until(lambda: stage.acks >= step["count"], step["timeout_s"]):
        raise StepFailed(f"only {stage.acks} of {step['count']} records acknowledged in time")
    return {"acks": stage.acks}


#: The service a step acts on, in a pipeline (``[apps.NAME]``); the one app's by default.
APP = Field(str, None)


@step_kind("start_apps", instances=Field(int, None), app=APP, label=Field(str, None))
def _start_apps(stage: Stage, step: Step) -> dict[str, Any]:
    """Start the app's instances (default ``app.instances``); in a pipeline, every service's
    (upstream first), or the one ``app`` names."""
    started = {}
    for name in [step["app"]] if step["app"] else list(stage.services):
        count = step["instances"] or stage.profile.services[name].instances
        for index in range(count):
            stage.app(name).start_instance(index)
        started[name] = count
    return {"instances": sum(started.values())} if len(started) == 1 else {"instances": started}


@step_kind("start_instance", instance=Field(int), app=APP, label=Field(str, None))
def _start_instance(stage: Stage, step: Step) -> dict[str, Any]:
    """One instance up (a scale-up, forcing a rebalance)."""
    stage.app(step["app"]).start_instance(step["instance"])
    return {}


@step_kind("stop_instance", instance=Field(int), app=APP, label=Field(str, None))
def _stop_instance(stage: Stage, step: Step) -> dict[str, Any]:
    """One instance down with SIGTERM (a scale-down)."""
    stage.app(step["app"]).stop_instance(step["instance"])
    return {}


def _client_settings(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    """An instance's new settings are checked like ``[client]``: Apache Kafka's names."""
    problem = check_client_config(options["client"])
    return ("client", problem) if problem else None


@step_kind(
    "restart_instance",
    _client_settings,
    instance=Field(int),
    client=Field(dict, {}),
    app=APP,
    label=Field(str, None),
)
def _restart_instance(stage: Stage, step: Step) -> dict[str, Any]:
    """One instance down with SIGTERM and up again with `client` over its settings (a roll)."""
    stage.app(step["app"]).restart_instance(step["instance"], step["client"])
    return {"instance": step["instance"], "client": dict(step["client"])}


@step_kind("stop_apps", app=APP, label=Field(str, None))
def _stop_apps(stage: Stage, step: Step) -> dict[str, Any]:
    """Stop every running instance (of every service of a pipeline, or of ``app``)."""
    stopped = []
    for name in [step["app"]] if step["app"] else list(stage.services):
        running = stage.app(name).running()
        for index in running:
            stage.app(name).stop_instance(index)
        stopped += running
    return {"stopped": stopped}


def caught_up(stage: Stage) -> Callable[[], bool]:
    """A check that the group (each group of a pipeline) has committed everything in the
    topics it reads.

    Everything: up to the log end the broker lists, and past every input it acknowledged
    (where a broker lists a wrong end, as Tansu 0.6.0 does for batches of several records, the
    acknowledgements still say where the log ends).
    """
    acked: dict[tuple[str, int], int] = {}
    for ack in stage.history.read("produce"):
        if ack["kind"] == "ack" and ack["offset"] is not None:  # a broker may not say where
            where = (ack["topic"], ack["partition"])
            acked[where] = max(acked.get(where, 0), ack["offset"] + 1)
    if stage.share_watch is not None:  # no commits: the share-partition start offsets
        from .share_group import drained

        by_partition = {partition: end for (_, partition), end in acked.items()}
        done = drained(stage.share_watch, by_partition)
        done.close = lambda: None  # type: ignore[attr-defined]
        return done
    readers = {
        group: group_reader(stage.cluster.bootstrap_servers, group) for group in stage.groups
    }

    def check() -> bool:
        rows = []
        for group, reads in stage.groups.items():  # a pipeline's: every service's group
            try:
                rows += sample_lag(readers[group], group, reads)
            except KafkaException as exc:  # a request timed out on a loaded machine: ask again
                log.warning("the group's committed offsets could not be read yet: %s", exc)
                return False
        ends = [(row, max(row["end"], acked.get(_where(row), 0))) for row in rows]
        return all(end == 0 or (row["committed"] or 0) >= end for row, end in ends)

    def close() -> None:
        for reader in readers.values():
            reader.close()

    check.close = close  # type: ignore[attr-defined]
    return check


def _where(row: Mapping[str, Any]) -> tuple[str, int]:
    return row["topic"], row["partition"]


def _wait_background(stage: Stage) -> None:
    for thread in stage.background:
        while thread.is_alive():
            stage.check()
            thread.join(POLL_S)
    stage.check()


@step_kind("drain", budget_s=Field((int, float)), label=Field(str, None))
def _drain(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait for background steps, then until the group has committed up to the log end."""
    started = time.monotonic()
    deadline = started + step["budget_s"]
    _wait_background(stage)
    check = caught_up(stage)
    try:
        drained = stage.until(check, max(0.0, deadline - time.monotonic()))
    finally:
        check.close()  # type: ignore[attr-defined]
    found = {"drained": drained, "drain_s": round(time.monotonic() - started, 2)}
    if stage.share_watch is not None:  # where the broker left the share group's start offsets
        found["share_group"] = stage.share_watch.latest
    return found


@step_kind("idle", seconds=Field((int, float)), label=Field(str, None))
def _idle(stage: Stage, step: Step) -> dict[str, Any]:
    """Nothing happens for that long (a quiet period)."""
    stage.wait(step["seconds"])
    return {}


@step_kind(
    "kill_at_random",
    _gap,
    times=Field(int),
    gap_s=Field(list),
    instance=Field(int, 0),
    signal=Field(str, "SIGKILL", SIGNALS),
    background=Field(bool, True),
    app=APP,
)
def _kill_at_random(stage: Stage, step: Step) -> dict[str, Any]:
    """Send a signal (SIGKILL by default) at random intervals; the supervisor restarts the app."""

    def kill() -> int:
        return kill_at_random(
            stage.app(step["app"]),
            stage.rng,
            step["times"],
            tuple(step["gap_s"]),
            stage.stop,
            instance=step["instance"],
            sig=signal.Signals[step["signal"]],
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


def _restart_target(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    if options["node"] is not None and options["node"] < 1:
        return "node", f"node ids start at 1, got {options['node']}; allowed: 1 to brokers"
    return None


def _rolling(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    if options["between_s"] < 0:
        return "between_s", f"must be 0 or more seconds, got {options['between_s']}"
    return None


@contextlib.contextmanager
def _refused() -> Iterator[None]:
    """A broker fault that could not be done fails its step, saying why."""
    try:
        yield
    except (BrokerFaultError, LogEndError, ValueError) as exc:
        raise StepFailed(str(exc)) from exc


#: How a broker fault names its broker: by role, and for a leader or follower, which partition's.
BROKER_TARGET = {
    "role": Field(str, "leader", ROLES),
    "topic": Field(str, "input"),
    "partition": Field(int, 0),
}
#: A broker fault that kills or freezes: never a broker holding the group's offsets, when
#: asked, so that the app's commits keep working through it.
SPARING = {"spare_group_offsets": Field(bool, False)}


def _spared(stage: Stage, step: Step) -> set[int]:
    """The nodes a broker fault must not hit: those holding the group's offsets, if asked."""
    if not step["spare_group_offsets"]:
        return set()
    cluster = stage.brokers().cluster
    return {node for group in stage.groups for node in group_offsets_holders(cluster, group)}


#: How long ``kill_broker`` waits for ``unreplicated`` records on the leader alone before it
#: kills anyway: a partition being written gets there within a few of its followers' fetches,
#: so this is reached only when nothing writes to it (an app that is still starting, or that
#: writes elsewhere), and then the kill can lose nothing either way.
UNREPLICATED_WAIT_S = 30.0
#: How long a leader frozen for the kill is given before it, for a fetch answer it had sent
#: just before the freeze to reach the follower to be elected (which then holds those records).
SETTLE_S = 0.5


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
        found["unreplicated_at_kill"] = _await_unreplicated(stage, step, node)

    with _refused():
        killed = stage.brokers().kill(
            step["role"], step["topic"], step["partition"], step["timeout_s"],
            _spared(stage, step), when=unreplicated if step["unreplicated"] else None,
        )  # fmt: skip
    return {**found, **killed}


def _await_unreplicated(stage: Stage, step: Step, node: int) -> int:
    """Freeze the partition's leader (``node``) once ``unreplicated`` of its records are in its
    log and not in the follower Kafka would elect in its place
    (:func:`~kafka_replay.faults.next_leader`), and return how many; or return whatever there
    is when :data:`UNREPLICATED_WAIT_S` passed.

    Both are asked for their own log end (:mod:`kafka_replay.cluster.log_end`), so who wrote
    the records does not matter. A follower's fetch waits at the leader and is answered with
    everything written meanwhile: counted at any moment, the records may be in an answer about
    to leave. A frozen leader answers nothing more, so the count holds once the follower is
    seen not to have taken them after :data:`SETTLE_S` (an answer already sent has arrived by
    then); if it took them, the leader runs again and the wait goes on. The kill follows at
    once (a frozen process dies of SIGKILL). The high watermark would not do: it is the slowest
    follower's, and the elected one may be faster.
    """
    faults = stage.brokers()
    partition = led_partition(faults.leaders(), step["topic"], step["partition"], node)
    topic = stage.topics[step["topic"]]
    heir = next_leader(faults.cluster, topic, partition, node)

    def log_end(of: int) -> int:
        port = faults.cluster.node(of).address.port
        return log_end_offsets("127.0.0.1", port, topic, [partition])[partition]

    deadline = time.monotonic() + UNREPLICATED_WAIT_S
    while True:
        stage.check()
        copied = log_end(heir)
        written = log_end(node)
        if written - copied >= step["unreplicated"]:
            faults.cluster.pause_node(node)
            try:
                time.sleep(SETTLE_S)
                above = written - log_end(heir)
            except BaseException:
                faults.cluster.resume_node(node)
                raise
            if above >= step["unreplicated"]:
                return above
            faults.cluster.resume_node(node)
        if time.monotonic() > deadline:
            return max(log_end(node) - log_end(heir), 0)
        time.sleep(UNREPLICATED_POLL_S)


@step_kind(
    "restart_broker",
    _restart_target,
    needs="restart_brokers",
    node=Field(int, None),
    timeout_s=Field((int, float), 120.0),
)
def _restart_broker(stage: Stage, step: Step) -> dict[str, Any]:
    """Start a killed broker again with its config and data; wait until it serves."""
    with _refused():
        return stage.brokers().restart(step["node"], step["timeout_s"])


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
    with _refused():
        faults = stage.brokers()
        node, found = faults.pause(
            step["role"], step["topic"], step["partition"], _spared(stage, step)
        )
    if not step["background"]:
        with _refused():
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
    with _refused():
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
        with _refused():
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
    return _broker_target(options, context)


@step_kind(
    "kafka_fault",
    _kafka_fault,
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
    or a cut; waits until it acted ``count`` times."""
    target = {name: step[name] for name in BROKER_TARGET}
    with _refused():
        try:
            return stage.network().play_request_fault(target, dict(step.options), step["timeout_s"])
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
    topic = stage.topics[step["topic"]]
    admin = stage.cluster.admin()
    before = held(stable_ends(admin, topic))
    aborted = [
        producer
        for row in before
        for producer in abort_transactions(
            stage.cluster.bootstrap_servers, topic, row["partition"], idle_ms=step["idle_s"] * 1000
        )
    ]
    stood = {row["partition"]: row["lso"] for row in before}

    def unblocked() -> bool:
        try:
            now = {row["partition"]: row["lso"] for row in stable_ends(admin, topic)}
        except KafkaException as exc:  # a request timed out on a loaded machine: ask again
            log.warning("last stable offsets could not be read yet: %s", exc)
            return False
        return all(now[partition] > lso for partition, lso in stood.items())

    moved = stage.until(unblocked, step["timeout_s"]) if before else True
    return {
        "held_before": before,
        "aborted": aborted,
        "unblocked": moved,
        "held_after": held(stable_ends(admin, topic)),
    }


@step_kind("heal_network", label=Field(str, None))
def _heal_network(stage: Stage, step: Step) -> dict[str, Any]:
    """End every network fault still active (each proxy passes traffic untouched again)."""
    with _refused():
        return {"healed": stage.network().heal()}


@step_kind(
    "wait_retention",
    needs="retention",
    topic=Field(str, "input"),
    count=Field(int),
    budget_s=Field((int, float)),
    label=Field(str, None),
)
def _wait_retention(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until retention has deleted ``count`` records from the start of the topic's log
    (its partitions' log start offsets add up to ``count``), up to ``budget_s``; records each
    partition's start, the records deleted and whether that happened within the budget (a
    profile whose fix keeps the records waits the whole budget and says so)."""
    topic = stage.topics[step["topic"]]
    admin = stage.cluster.admin()
    starts: dict[int, int] = {}

    def deleted() -> bool:
        try:
            partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
            specs = {TopicPartition(topic, p): OffsetSpec.earliest() for p in partitions}
            found = admin.list_offsets(specs, request_timeout=10)
            starts.update({tp.partition: f.result().offset for tp, f in found.items()})
        except KafkaException as exc:  # a request timed out on a loaded machine: ask again
            log.warning("the log start offsets could not be read yet: %s", exc)
            return False
        return sum(starts.values()) >= step["count"]

    reached = stage.until(deleted, step["budget_s"])
    return {
        "topic": topic,
        "log_starts": {str(p): o for p, o in sorted(starts.items())},
        "deleted": sum(starts.values()),
        "within_budget": reached,
    }


def run_steps(stage: Stage, steps: tuple[Step, ...], progress: Callable[[str], None]) -> None:
    """Do every step in order, recording each in the ``steps`` stream."""
    record = stage.history.stream("steps")
    for index, step in enumerate(steps):
        stage.check()
        label = step.options.get("label")
        progress(f"step {index + 1}/{len(steps)}: {step.do}" + (f" ({label})" if label else ""))
        started = time.time()
        found = STEPS[step.do].play(stage, step)
        record.append(
            {
                "kind": "step",
                "index": index,
                "do": step.do,
                "label": label,
                "started": started,
                "ended": time.time(),
                **found,
            }
        )


def stop_background(stage: Stage, timeout: float = 30.0) -> None:
    """Stop background steps, then heal the network and bring back brokers the steps left down.

    The checker then reads a whole cluster and the next run can reuse it; a broker that cannot
    be brought back is logged (never raised: the apps must still be stopped), and the pool
    discards that cluster.
    """
    stage.stop.set()
    for thread in stage.background:
        thread.join(timeout)
    if stage.broker_faults is None and stage.network_faults is None:
        return
    started = time.time()
    restored, error = [], None
    try:
        if stage.network_faults is not None:
            restored += stage.network_faults.heal()
        if stage.broker_faults is not None:
            restored += stage.broker_faults.restore()
    except Exception as exc:  # logged and recorded; the pool starts a fresh cluster instead
        error = f"{type(exc).__name__}: {exc}"
        log.warning("could not restore the brokers after the steps: %s", error)
    restored = sorted(set(restored))
    if restored or error:
        stage.history.stream("steps").append(
            {
                "kind": "restore",
                "do": "restore_brokers",
                "label": None,
                "started": started,
                "ended": time.time(),
                "nodes": restored,
                "error": error,
            }
        )
