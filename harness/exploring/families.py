"""The fault families an exploration draws from, each a few of the incident format's own step
kinds with drawn values.

Every fault a family draws heals on its own before the schedule's drain: a killed app is
restarted by its supervisor, a frozen broker resumes, a network fault lasts a set time, an
extra member leaves again. What no correct service survives (retention shorter than the run,
an unclean election) is in no family drawn by default: the ``retention`` family, whose
offsets expire while the service is down, is drawn only when asked for (a service that
rereads from the start duplicates, the exactly-once reference too).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Step = Mapping[str, Any]
#: How long a drawn request fault waits for the requests it acts on: a service that stalled
#: sends none, and the play is over sooner.
REQUESTS_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Layout:
    """What a drawn run looks like, which the faults are drawn against."""

    partitions: int
    instances: int
    records: int
    #: The service commits its offsets in transactions (exactly-once): TxnOffsetCommit, not
    #: OffsetCommit, carries them.
    transactional: bool = False
    #: Kafka nodes: three where a family's faults need replicas (every topic then has three,
    #: and a write needs two in sync).
    brokers: int = 1


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    #: Drawn unless ``--families`` says otherwise.
    default: bool
    #: One fault: its steps, played in order once the workload has that many acks.
    draw: Callable[[random.Random, Layout], tuple[Step, ...]]
    #: Broker settings a schedule with this family's faults runs under: setting -> (value,
    #: why, as ``[broker_needs]`` says it).
    broker: Mapping[str, tuple[Any, str]] = field(default_factory=dict)
    #: Step fields shrinking leaves as drawn: smaller, the fault no longer happens.
    fixed: tuple[str, ...] = ()
    #: The brokers its faults need: 3 for one that takes a partition's leader away.
    brokers: int = 1


def _seconds(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 1)


def _app(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    instance = rng.randrange(layout.instances)
    if rng.random() < 0.6:
        low = _seconds(rng, 0.5, 2.0)
        gap = [low, round(low + rng.uniform(0.5, 2.0), 1)]
        times = rng.randint(1, 5)
        return (
            {
                "do": "kill_at_random",
                "instance": instance,
                "times": times,
                "gap_s": gap,
                "background": False,
            },
        )
    return ({"do": "restart_instance", "instance": instance},)


#: How long a frozen instance stays stopped: past the session timeout every schedule gives the
#: service (6 s), so the group hands its partitions to another member while it is away.
FREEZE_S = (8.0, 14.0)


def _freeze(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    frozen = {
        "do": "kill_at_random",
        "instance": rng.randrange(layout.instances),
        "times": 1,
        "gap_s": [0.0, 0.0],
        "signal": "SIGSTOP",
        "background": False,
    }
    thawed = {**frozen, "signal": "SIGCONT"}
    return (frozen, {"do": "idle", "seconds": _seconds(rng, *FREEZE_S), "label": "frozen"}, thawed)


def _groups(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    extra = layout.instances  # one more member than the schedule starts with
    return (
        {"do": "start_instance", "instance": extra},
        {"do": "idle", "seconds": _seconds(rng, 1.0, 6.0)},
        {"do": "stop_instance", "instance": extra},
    )


def _brokers(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    if rng.random() < 0.7:
        return ({"do": "pause_broker", "role": "any", "seconds": _seconds(rng, 1.0, 8.0)},)
    return ({"do": "rolling_restart"},)


def _leaders(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    """The leader of a partition the service reads or writes killed and started again, or
    frozen: its followers take over, and it comes back to catch up."""
    leader = {
        "role": "leader",
        "topic": rng.choice(("input", "output")),
        "partition": rng.randrange(layout.partitions),
    }
    if rng.random() < 0.5:
        return ({"do": "pause_broker", **leader, "seconds": _seconds(rng, 1.0, 8.0)},)
    return (
        {"do": "kill_broker", **leader},
        {"do": "idle", "seconds": _seconds(rng, 1.0, 5.0)},
        {"do": "restart_broker"},
    )


def _network(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    seconds = _seconds(rng, 1.0, 6.0)
    fault = rng.choice(("latency", "blackhole", "reset", "cut_off"))
    step: dict[str, Any] = {
        "do": "network_fault",
        "fault": fault,
        "role": "all",
        "seconds": seconds,
    }
    if fault == "latency":
        step["latency_ms"] = rng.choice((50, 200, 1000))
    return (step,)


def _requests(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    commit = "TxnOffsetCommit" if layout.transactional else "OffsetCommit"
    api, action = rng.choice(
        (
            ("Produce", "lose_answer"),
            (commit, "lose_answer"),
            ("Fetch", "delay"),
            (commit, "delay"),
            ("Produce", "cut"),
            (commit, "kill_sender"),
            ("Produce", "kill_sender"),
        )
    )
    step: dict[str, Any] = {
        "do": "kafka_fault",
        "api": api,
        "action": action,
        "clients": "app",
        "nth": rng.randint(1, 8),
        "count": rng.randint(1, 3),
        "timeout_s": REQUESTS_TIMEOUT_S,
    }
    if action == "delay":
        step["delay_ms"] = rng.choice((500, 2000, 5000))
    return (step,)


#: How long the service stays down while its offsets expire: the broker's shortest
#: ``offsets.retention.minutes`` (1) runs from when the group empties (a killed member's
#: session ends 6 s later), and the broker looks every second.
OFFSETS_EXPIRE_S = 75


def _retention(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    return (
        {"do": "stop_apps"},
        {"do": "idle", "seconds": OFFSETS_EXPIRE_S, "label": "offsets expire"},
        {"do": "start_apps", "label": "redeploy"},
    )


def _partitions(rng: random.Random, layout: Layout) -> tuple[Step, ...]:
    return (
        {"do": "add_partitions", "topic": "input", "count": layout.partitions + rng.randint(1, 4)},
    )


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("app", "the app's instances killed (SIGKILL, restarted) or restarted", True, _app),
        Family("groups", "a member joins the group for a few seconds, then leaves", True, _groups),
        Family(
            "freeze",
            "an instance stopped (SIGSTOP) past its session timeout, then resumed (SIGCONT): "
            "a zombie that wakes after the group gave its partitions away",
            True,
            _freeze,
        ),
        Family(
            "brokers",
            "a broker frozen for seconds, or every broker restarted in turn",
            True,
            _brokers,
        ),
        Family(
            "network",
            "latency, a black hole, resets or a cut between clients and brokers",
            True,
            _network,
        ),
        Family(
            "requests",
            "the app's Kafka requests answered late, cut, or their answer lost "
            "after the broker acted, or their sender killed then",
            True,
            _requests,
        ),
        Family(
            "leaders",
            "on three brokers: the leader of a partition the service reads or writes killed "
            "and restarted, or frozen for seconds",
            True,
            _leaders,
            brokers=3,
        ),
        Family("partitions", "the input topic's partitions raised mid-stream", True, _partitions),
        Family(
            "retention",
            "every instance stopped until the group's committed offsets expire "
            "(75 s), then started again",
            False,
            _retention,
            broker={
                "offsets.retention.minutes": (
                    1,
                    "essential: the group's offsets expire while the service is down",
                ),
                "offsets.retention.check.interval.ms": (
                    1000,
                    "time: the broker looks for expired offsets every second",
                ),
            },
            fixed=("seconds",),
        ),
    )
}


def choose_families(names: str | None) -> tuple[Family, ...]:
    """``app,brokers`` -> those families; None -> the defaults. An unknown name is refused."""
    if names is None:
        return tuple(f for f in FAMILIES.values() if f.default)
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown or not chosen:
        raise ValueError(
            f"--families: unknown family {', '.join(unknown) or '(none given)'}; "
            f"allowed: {', '.join(FAMILIES)}"
        )
    return tuple(FAMILIES[name] for name in dict.fromkeys(chosen))
