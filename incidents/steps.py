"""The steps of an incident's scenario, each done to the real cluster and the real app.

A :class:`Stage` holds what the steps act on. Every step is recorded in the run history's
``steps`` stream with when it started and ended and what it found, so symptoms can look at
what happened during a given step (the quiet period, the redeploy).
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.apps import Supervisor
from harness.cluster import Cluster
from harness.faults import add_partitions, kill_at_random
from harness.history import RunHistory, sample_lag
from harness.history.consumer_offsets import group_reader
from harness.workload import Workload, WorkloadProducer

from .definition import Profile, Step

POLL_S = 0.2


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
    _lock: threading.Lock = field(default_factory=threading.Lock)

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


def _produce(stage: Stage, step: Step) -> dict[str, Any]:
    workload: Workload = stage.profile.workloads[step["workload"]]
    producer = WorkloadProducer(
        stage.cluster.bootstrap_servers,
        stage.topics["input"],
        stage.on_produce_event(stage.history.stream("produce")),
        config=dict(stage.profile.producer),
    )
    if step["background"]:
        stage.in_background(f"produce-{workload.name}", lambda: producer.run(workload, stage.stop))
        return {"workload": workload.name}
    stats = producer.run(workload, stage.stop)
    return {"workload": workload.name, "sent": stats.sent, "seconds": round(stats.seconds, 2)}


def _wait_produced(stage: Stage, step: Step) -> dict[str, Any]:
    for thread in stage.background:
        while thread.name.startswith("produce-") and thread.is_alive():
            stage.check()
            thread.join(POLL_S)
    stage.check()
    return {"acks": stage.acks}


def _wait_paused(stage: Stage, step: Step) -> dict[str, Any]:
    if not stage.until(lambda: stage.paused, step["timeout_s"]):
        raise StepFailed(f"the workload did not pause within {step['timeout_s']}s")
    return {"acks": stage.acks}


def _wait_acks(stage: Stage, step: Step) -> dict[str, Any]:
    if not stage.until(lambda: stage.acks >= step["count"], step["timeout_s"]):
        raise StepFailed(f"only {stage.acks} of {step['count']} records acknowledged in time")
    return {"acks": stage.acks}


def _start_apps(stage: Stage, step: Step) -> dict[str, Any]:
    count = step["instances"] or stage.profile.app.instances
    for index in range(count):
        stage.apps.start_instance(index)
    return {"instances": count}


def _start_instance(stage: Stage, step: Step) -> dict[str, Any]:
    stage.apps.start_instance(step["instance"])
    return {}


def _stop_instance(stage: Stage, step: Step) -> dict[str, Any]:
    stage.apps.stop_instance(step["instance"])
    return {}


def _stop_apps(stage: Stage, step: Step) -> dict[str, Any]:
    running = stage.apps.running()
    for index in running:
        stage.apps.stop_instance(index)
    return {"stopped": running}


def caught_up(stage: Stage) -> Callable[[], bool]:
    """A check that the group has committed everything in the input topic."""
    reader = group_reader(stage.cluster.bootstrap_servers, stage.group)

    def check() -> bool:
        rows = sample_lag(reader, stage.group, stage.topics["input"])
        return all(row["lag"] == 0 for row in rows)

    check.close = reader.close  # type: ignore[attr-defined]
    return check


def _wait_background(stage: Stage) -> None:
    for thread in stage.background:
        while thread.is_alive():
            stage.check()
            thread.join(POLL_S)
    stage.check()


def _drain(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait for the workload and faults to finish, then for the group to catch up."""
    started = time.monotonic()
    deadline = started + step["budget_s"]
    _wait_background(stage)
    check = caught_up(stage)
    try:
        drained = stage.until(check, max(0.0, deadline - time.monotonic()))
    finally:
        check.close()  # type: ignore[attr-defined]
    return {"drained": drained, "drain_s": round(time.monotonic() - started, 2)}


def _idle(stage: Stage, step: Step) -> dict[str, Any]:
    stage.wait(step["seconds"])
    return {}


def _kill_at_random(stage: Stage, step: Step) -> dict[str, Any]:
    def kill() -> int:
        return kill_at_random(
            stage.apps,
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


def _add_partitions(stage: Stage, step: Step) -> dict[str, Any]:
    add_partitions(stage.cluster, stage.topics[step["topic"]], step["count"])
    return {"partitions": step["count"]}


STEPS: dict[str, Callable[[Stage, Step], dict[str, Any]]] = {
    "produce": _produce,
    "wait_produced": _wait_produced,
    "wait_paused": _wait_paused,
    "wait_acks": _wait_acks,
    "start_apps": _start_apps,
    "start_instance": _start_instance,
    "stop_instance": _stop_instance,
    "stop_apps": _stop_apps,
    "drain": _drain,
    "idle": _idle,
    "kill_at_random": _kill_at_random,
    "add_partitions": _add_partitions,
}


def run_steps(stage: Stage, steps: tuple[Step, ...], progress: Callable[[str], None]) -> None:
    """Do every step in order, recording each in the ``steps`` stream."""
    record = stage.history.stream("steps")
    for index, step in enumerate(steps):
        stage.check()
        label = step.options.get("label")
        progress(f"step {index + 1}/{len(steps)}: {step.do}" + (f" ({label})" if label else ""))
        started = time.time()
        found = STEPS[step.do](stage, step)
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
    stage.stop.set()
    for thread in stage.background:
        thread.join(timeout)
