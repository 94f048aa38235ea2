"""The faults incidents use: random kills of an app instance and partition increases."""

from __future__ import annotations

import random
import signal
import threading
import time

from confluent_kafka.admin import NewPartitions

from kafka_replay.apps import Supervisor
from kafka_replay.cluster import Cluster
from kafka_replay.waiting import poll

RESTART_WAIT_S = 60.0
#: Beyond its gap, how long each kill of a series may wait for the app to be running again.
RESTART_SLACK_S = 10.0
#: How long a kill's series waits to see the instance it killed exit.
EXIT_WAIT_S = 5.0


def kill_at_random(
    apps: Supervisor,
    rng: random.Random,
    times: int,
    gap_s: tuple[float, float],
    stop: threading.Event,
    instance: int = 0,
    sig: signal.Signals = signal.SIGKILL,
    slack_s: float = RESTART_SLACK_S,
    part: str = "",
) -> int:
    """Send ``sig`` to ``instance`` ``times`` times, a random ``gap_s`` apart; return the count.

    Each gap starts once the instance runs again, so every kill lands on a live process that
    the supervisor restarted; ``stop`` ends the series early. An app that keeps dying on its
    own before a gap ends would never be killed: the series ends when ``times`` gaps and
    restarts have had their time, with the kills sent so far (a condition on the count says
    whether the run had enough). ``part``: only the instance's process of that name (a Flink
    session's ``taskmanager-0``), each gap starting once the instance runs one again. A frozen
    instance (SIGSTOP) still runs: the next gap starts at once, and so does a thaw's (SIGCONT).
    """
    sent = 0
    deadline = time.monotonic() + times * (max(gap_s) + slack_s)
    while sent < times and not stop.is_set() and time.monotonic() < deadline:
        if not _wait_running(apps, instance, stop, part):
            break
        if stop.wait(rng.uniform(*gap_s)):
            break
        try:
            pid = apps.signal_part(instance, part, sig) if part else apps.signal(instance, sig)
        except RuntimeError:  # it exited on its own during the gap; try again once restarted
            continue
        sent += 1
        if sig not in (signal.SIGSTOP, signal.SIGCONT):  # a freeze or a thaw ends nothing
            _wait_exited(apps, instance, stop, part, pid)
    return sent


def _wait_running(apps: Supervisor, instance: int, stop: threading.Event, part: str) -> bool:
    """Until the instance (and its ``part``) runs; False when ``stop`` came first or it does
    not run within ``RESTART_WAIT_S``; an instance running without that part fails, naming its
    parts."""

    def running() -> bool:
        if instance in apps.running() and not (part and part not in apps.parts(instance)):
            return True
        apps.check()
        return False

    if poll(running, RESTART_WAIT_S, every_s=0.05, stop=stop) is not None:
        return True
    if part and not stop.is_set() and instance in apps.running():
        named = ", ".join(sorted(apps.parts(instance))) or "none"
        raise RuntimeError(
            f"instance {instance} runs no part {part!r} within {RESTART_WAIT_S:.0f}s "
            f"(its parts: {named}; a Flink job names them with --cluster session)"
        )
    return False


def _wait_exited(
    apps: Supervisor, instance: int, stop: threading.Event, part: str, pid: int | None
) -> None:

    def exited() -> bool:
        if part:  # started again, or the instance ended
            return apps.parts(instance).get(part) != pid
        return instance not in apps.running()

    poll(exited, EXIT_WAIT_S, every_s=0.02, stop=stop)


def add_partitions(cluster: Cluster, topic: str, total: int, timeout: float = 30.0) -> int:
    """Raise ``topic`` to ``total`` partitions (keys then hash onto a different count); return
    how many it had before (the new ones are numbered from there)."""
    admin = cluster.admin()
    before = len(admin.list_topics(topic, timeout=timeout).topics[topic].partitions)
    futures = admin.create_partitions([NewPartitions(topic, total)])
    futures[topic].result(timeout)
    cluster.wait_for_leaders(topic, total, timeout)
    return before
