"""What a scenario's steps act on (:class:`Stage`), and the loop that plays them in order.

A step kind is a function of a :class:`Stage` and a step (:mod:`kafka_replay.playing.steps`
plays the app and workload steps, :mod:`kafka_replay.playing.fault_steps` names the faults);
:func:`run_steps` records each in the run history's ``steps`` stream with when it started and
ended and what it found, so symptoms can look at what happened during a given step (the quiet
period, the redeploy). :func:`stop_background` ends what steps left running.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from kafka_replay.apps import Supervisor
from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import Profile, Step
from kafka_replay.definitions.vocabulary import Field, step_kinds
from kafka_replay.faults import BrokerFaultError, BrokerFaults, RequestFaults
from kafka_replay.history import LagSampler, RunHistory
from kafka_replay.waiting import poll
from kafka_replay.workload import Workload

from .services import Serving

if TYPE_CHECKING:
    from .mirror import RunMirror
    from .run_record import RunRecord

log = logging.getLogger(__name__)

POLL_S = 0.2

#: The service a step acts on, in a pipeline (``[apps.NAME]``); the one app's by default.
APP = Field(str, None)


class StepFailed(RuntimeError):
    """A step could not do what the scenario needs (the app never came up, a wait timed out)."""


T = TypeVar("T")
F = TypeVar("F", BrokerFaults, RequestFaults)


class _OfRun(Generic[T]):
    """A field of the run's record (:class:`RunRecord`), read through the stage that steps get."""

    def __init__(self, field_name: str = "") -> None:
        self._field = field_name

    def __set_name__(self, owner: type, name: str) -> None:
        self._field = self._field or name

    @overload
    def __get__(self, stage: None, owner: type) -> _OfRun[T]: ...
    @overload
    def __get__(self, stage: Stage, owner: type | None = None) -> T: ...
    def __get__(self, stage: Stage | None, owner: type | None = None) -> T | _OfRun[T]:
        return self if stage is None else getattr(stage.run, self._field)

    def __set__(self, stage: Stage, value: object) -> None:
        raise AttributeError(f"{self._field} is the run record's: set it on stage.run")


@dataclass
class Stage:
    """What a scenario's steps act on: the run's record, and what the steps themselves keep
    while they play (their randomness, what runs in the background, the faults under way)."""

    run: RunRecord
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
    #: The run's lag samplers: a failover moves them to the mirror with the group.
    lag_samplers: list[LagSampler] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def cluster(self) -> Cluster:
        assert self.run.cluster is not None  # start-up made it before any step
        return self.run.cluster

    history = _OfRun[RunHistory]()
    profile = _OfRun[Profile]()
    topics = _OfRun[dict[str, str]]()
    #: The output's group (a pipeline's last service's).
    group = _OfRun[str]()
    #: Every service's supervisor by its name (``app`` in the one-app form), upstream first.
    services = _OfRun[dict[str, Supervisor]]("supervisors")
    #: What each group reads (the topics as created), by group: the drain waits for each.
    reads = _OfRun[dict[str, tuple[str, ...]]]()
    #: A share group's watch (``[group] type = "share"``): the drain reads its start offsets.
    share_watch = _OfRun[Any]()
    #: The cluster the apps are served by: the run's until a ``fail_over`` step moves them to
    #: the mirror.
    serving = _OfRun[Serving | None]()

    @property
    def mirror(self) -> RunMirror | None:
        return self.run.mirror

    @property
    def failed_over(self) -> bool:
        """Whether a ``fail_over`` step moved the apps to the mirror."""
        return self.serving is not None and self.serving.cluster is not self.cluster

    @failed_over.setter
    def failed_over(self, moved: bool) -> None:
        assert self.serving is not None and self.mirror is not None
        self.serving.cluster = self.mirror.cluster if moved else self.cluster

    @property
    def apps_cluster(self) -> Cluster:
        """The cluster the apps read from and commit to now."""
        return self.serving.cluster if self.serving is not None else self.cluster

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.topics["input"],)

    def app(self, name: str | None) -> Supervisor:
        """The supervisor of service ``name``; None: the one app (a pipeline's first)."""
        return self.services[name] if name is not None else next(iter(self.services.values()))

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
            self.broker_faults = self._made(BrokerFaults)
        return self.broker_faults

    def network(self) -> RequestFaults:
        """The run's network and request faults (refused, saying why, on a cluster without
        proxies)."""
        if self.network_faults is None:
            self.network_faults = self._made(RequestFaults)
        return self.network_faults

    def _made(self, faults: type[F]) -> F:
        """The run's broker or network faults, made on the first step that needs them."""
        try:
            return faults(self.cluster, self.topics, self.rng, self.stop)
        except BrokerFaultError as exc:
            raise StepFailed(str(exc)) from exc

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
        self.app(None).check()

    def wait(self, seconds: float) -> None:
        """Let scenario time pass (an idle period), still noticing failures."""
        poll(self.check, seconds, every_s=POLL_S, stop=self.stop)

    def until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait for ``condition``; False if ``timeout`` passed first."""

        def met() -> bool:
            if condition():
                return True
            self.check()
            return False

        return poll(met, timeout, every_s=POLL_S) is not None

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


def run_steps(stage: Stage, steps: tuple[Step, ...], progress: Callable[[str], None]) -> None:
    """Do every step in order, recording each in the ``steps`` stream."""
    record = stage.history.stream("steps")
    for index, step in enumerate(steps):
        stage.check()
        label = step.options.get("label")
        progress(f"step {index + 1}/{len(steps)}: {step.do}" + (f" ({label})" if label else ""))
        started = time.time()
        found = step_kinds()[step.do].play(stage, step)
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
