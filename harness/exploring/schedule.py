"""A schedule: a workload and the faults played over it, drawn from a seed, written down as an
incident definition.

The same seed and index draw the same schedule on every machine (:func:`draw`); a schedule is
only data, so shrinking one is making smaller copies (:func:`simpler_faults`), and a finding is
its definition text (:func:`definition_text`), which ``kafka-replay run --incidents DIR``
replays.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .families import FAMILIES, Family, Layout, Step
from .toml_text import toml_value
from .windows import Window

if TYPE_CHECKING:
    from .shape import ServiceShape

#: The workload every schedule plays: onboarding events, 80 a second (600: 7.5 s).
RECORDS = 600
RATE = 80.0
KEYS = 60
#: Faults start once this share of the records is acknowledged, at the earliest ...
EARLIEST = 0.08
#: ... and at the latest while this many seconds of records are still to come (or halfway):
#: what a fault does must reach the records that follow it, in every play alike.
TAIL_S = 5.0
MAX_FAULTS = 3
#: How long the service's instances may take to settle in their group before records flow
#: (then they flow anyway: a service that assigns itself its partitions joins no group).
MEMBERS_S = 10
#: How long the backlog may take to drain after the last record. A transactional service is
#: given no more: a transaction left open until ``transaction.timeout.ms`` runs out is itself a
#: defect the catalog replays (a restart that cannot fence it holds read_committed readers).
DRAIN_S = 30
#: The reference service for each guarantee: the catalog's correct app, which must survive a
#: schedule for a finding to count as the service's (not Kafka's or the harness's).
REFERENCE_APPS = {
    "exactly-once": "{python} -m kafka_replay_incidents.apps.eos_processor",
    "at-least-once": "{python} -m kafka_replay_incidents.apps.batch_forwarder",
}


#: What a schedule with offsets that expire stands for.
OFFSETS_SCALE = (
    " The group's committed offsets are kept 1 minute (offsets.retention.minutes), where "
    "production keeps them 7 days: a service down 75 s here is one down for a week there."
)


@dataclass(frozen=True)
class Fault:
    family: str
    #: Played once the workload has this many acknowledgements.
    after_acks: int
    steps: tuple[Step, ...]
    #: The window of exposure it was aimed at (:mod:`.windows`); None: drawn at random.
    aim: Window | None = None

    def describe(self) -> str:
        steps = "; ".join(_step_text(step) for step in self.steps)
        aimed = f", aimed at {self.aim.describe()}" if self.aim else ""
        return f"{steps} (after {self.after_acks} acks{aimed})"


@dataclass(frozen=True)
class Schedule:
    seed: int
    index: int
    layout: Layout
    faults: tuple[Fault, ...]

    @property
    def name(self) -> str:
        return f"explored-{self.seed}-{self.index}"

    def in_order(self) -> list[Fault]:
        """The faults in the order they are played (a later start may pass another fault)."""
        return sorted(self.faults, key=lambda fault: fault.after_acks)

    def timeline(self) -> list[str]:
        return [fault.describe() for fault in self.in_order()]


def draw(
    seed: int,
    index: int,
    families: Sequence[Family],
    records: int = RECORDS,
    transactional: bool = False,
) -> Schedule:
    """The ``index``-th schedule of ``seed``: 1 to 3 faults from ``families`` over ``records``
    (``transactional``: the service commits its offsets in transactions)."""
    rng = random.Random(f"{seed}:{index}")
    partitions, instances = rng.choice((2, 3, 4)), rng.choice((1, 2))
    replicated = [family for family in families if family.brokers > 1]
    three = bool(replicated) and (len(replicated) == len(families) or rng.random() < 0.5)
    layout = Layout(partitions, instances, records, transactional, 3 if three else 1)
    fitting = [family for family in families if family.brokers <= layout.brokers]
    faults = []
    for _ in range(rng.randint(1, MAX_FAULTS)):
        family = rng.choice(fitting)
        after = rng.randint(int(records * EARLIEST), latest_ack(records))
        faults.append(Fault(family.name, after, family.draw(rng, layout)))
    return composed(seed, index, layout, faults)


def composed(seed: int, index: int, layout: Layout, faults: Sequence[Fault]) -> Schedule:
    """A schedule of faults drawn one by one: in the order they are played, each partition
    increase counted over the one before it."""
    in_order = sorted(faults, key=lambda f: f.after_acks)
    return Schedule(seed, index, layout, tuple(_growing(in_order, layout.partitions)))


def _growing(faults: list[Fault], first: int) -> Iterator[Fault]:
    """Each partition increase over the one before it: each was drawn as a growth of the
    topic's first size, and a count that is no increase is refused by the brokers."""
    partitions = first
    for fault in faults:
        steps = []
        for step in fault.steps:
            if step["do"] == "add_partitions":
                partitions += step["count"] - first
                step = {**step, "count": partitions}
            steps.append(step)
        yield replace(fault, steps=tuple(steps))


def latest_ack(records: int) -> int:
    """The most acks a fault waits for: ``TAIL_S`` of records after it, or half of them."""
    return max(records // 2, records - int(RATE * TAIL_S))


def simpler_faults(fault: Fault, records: int = RECORDS) -> Iterator[Fault]:
    """Smaller versions of one fault, the simplest first: fewer times and counts, shorter
    durations, a later start (as late as faults are drawn, in a workload of ``records``; not
    for a fault aimed at a window, which is where it strikes)."""
    fixed = FAMILIES[fault.family].fixed if fault.family in FAMILIES else ()
    for i, step in enumerate(fault.steps):
        for key, value in step.items():
            smaller = None if key in fixed else _smaller(step["do"], key, value)
            if smaller is not None:
                steps = (*fault.steps[:i], {**step, key: smaller}, *fault.steps[i + 1 :])
                yield replace(fault, steps=steps)
    if fault.after_acks < latest_ack(records) and not fault.aim:  # an aimed one is placed
        yield replace(fault, after_acks=latest_ack(records))


def _smaller(step_kind: str, key: str, value: Any) -> Any:
    """A smaller value of one field, or None (a partition count is a topic's size, not a
    fault's strength: it stays)."""
    if key in ("times", "count") and step_kind != "add_partitions" and value > 1:
        return 1
    if key in ("seconds", "delay_ms", "latency_ms") and isinstance(value, (int, float)):
        floor = {"seconds": 1.0, "delay_ms": 500, "latency_ms": 50}[key]
        half = type(value)(round(value / 2, 1)) if isinstance(value, float) else value // 2
        return half if half >= floor and half < value else None
    if key == "gap_s" and value[1] > value[0]:
        return [value[0], value[0]]
    return None


#: Steps that act on one service's instances: in a pipeline, they name the explored service.
ONE_SERVICE_STEPS = ("kill_at_random", "restart_instance", "start_instance", "stop_instance")


def steps_of(schedule: Schedule, place: str | None = None) -> list[dict[str, Any]]:
    """The definition's steps: apps up, the workload in the background, each fault once its
    acks are in, then every record produced and the backlog drained; ``place``: the pipeline's
    service explored, which the faults on instances aim at."""
    steps: list[dict[str, Any]] = [
        {"do": "start_apps"},
        # as in production, the service has its partitions before records flow
        {"do": "wait_members", "budget_s": MEMBERS_S},
        {"do": "idle", "seconds": 1, "label": "service up"},
        {"do": "produce", "workload": "events", "background": True},
    ]
    for fault in schedule.in_order():
        steps.append({"do": "wait_acks", "count": fault.after_acks})
        for step in fault.steps:
            aimed = place is not None and step["do"] in ONE_SERVICE_STEPS
            steps.append({**step, "app": place} if aimed else dict(step))
    steps += [{"do": "wait_produced"}, {"do": "drain", "budget_s": DRAIN_S}]
    return steps


def definition_text(
    schedule: Schedule,
    app: str,
    guarantee: str,
    signature: Mapping[str, str],
    *,
    name: str | None = None,
    description: str = "",
    image: str | None = None,
    service: ServiceShape | None = None,
) -> str:
    """The incident definition that plays ``schedule`` against ``app`` (profile vulnerable)
    and against the reference service for ``guarantee`` (profile remediated); ``image``: the
    service is that container image, ``app`` its arguments (empty: the image's command);
    ``service``: what an ``--expect`` file says the service makes of each input (its topics,
    its ``[expect]``, poison pills in the workload when it dead-letters, and a reference that
    does the same), and the pipeline it plays in, if any (its services, ``app`` and the
    reference in the place explored)."""
    layout = schedule.layout
    reference = REFERENCE_APPS[guarantee]
    poison_at: list[int] = []
    place = service.place if service is not None else None
    if service is not None:
        reference = service.reference(reference)
        poison_at = service.poison_at(schedule.seed, layout.records)
    apps = (
        service.app_lines(app, layout.instances)
        if service is not None and service.apps
        else ["[app]", f"command = {toml_value(app)}", f"instances = {layout.instances}", ""]
    )
    own = f"apps.{place}" if place else "app"  # the explored service's table
    post = f"kafka-replay explore --seed {schedule.seed} (schedule {schedule.index})"
    lines = [
        f"name = {toml_value(name or schedule.name)}",
        f"title = {toml_value(description or 'A schedule drawn by kafka-replay explore')}",
        f"post = {toml_value(post)}",
        f"guarantee = {toml_value(guarantee)}",
        f"seed = {schedule.seed}",
        *([f"brokers = {layout.brokers}"] if layout.brokers > 1 else []),
        "time_scale = "
        + toml_value(
            f"Drawn, not from a post: {layout.records} onboarding events at {RATE:g} a second over "
            f"{layout.partitions} partitions"
            + (f" with three replicas on {layout.brokers} brokers" if layout.brokers > 1 else "")
            + f", {layout.instances} instance(s) of the app, and "
            f"{len(schedule.faults)} fault(s) that each heal before the drain. "
            "Each fault stands for the same event in production (a crash, a broker's pause, "
            "a network fault): only its order among the records matters, not the hours around it. "
            "Clients learn of new partitions within seconds (the workload producer's metadata "
            "every second, the service's every 2 s), where production takes up to 5 minutes."
            + (OFFSETS_SCALE if "offsets.retention.minutes" in broker_settings(schedule) else "")
        ),
        "",
        "[topics]",
        f"input = {layout.partitions}",
        f"output = {layout.partitions}",
        "",
        *(service.toml_lines() if service is not None else []),
        *_broker_tables(schedule),
        "[producer]",
        '"topic.metadata.refresh.interval.ms" = 1000',
        "",
        "[client]",
        '"session.timeout.ms" = 6000',
        '"heartbeat.interval.ms" = 1000',
        '"metadata.max.age.ms" = 2000',
        "",
        *apps,
        "[workloads.events]",
        'generator = "student_onboarding"',
        f"count = {layout.records}",
        f"students = {KEYS}",
        f"rate = {RATE}",
        f"seed = {schedule.seed}",
        *([f"poison_at = {toml_value(poison_at)}"] if poison_at else []),
    ]
    for step in steps_of(schedule, place):
        lines += ["", "[[steps]]", *(f"{key} = {toml_value(value)}" for key, value in step.items())]
    lines += [
        "",
        "[signature]",
        *(f"{key} = {toml_value(cond)}" for key, cond in signature.items()),
    ]
    lines += [
        "",
        "[profiles.vulnerable]",
        f"description = {toml_value('the service under test')}",
        *([f"{own}.image = {toml_value(image)}"] if image else []),
        "",
        "[profiles.remediated]",
        f"description = {toml_value(f'the catalog reference service for {guarantee}')}",
        f"{own}.command = {toml_value(reference)}",
    ]
    return "\n".join(lines) + "\n"


#: What a schedule on three brokers runs with: a write needs two replicas in sync.
REPLICATED = {
    "min.insync.replicas": (
        2,
        "essential: with acks=all a write is on two of the three brokers before it is "
        "acknowledged, so losing a leader loses no acknowledged write of a correct service",
    )
}


def broker_settings(schedule: Schedule) -> dict[str, tuple[Any, str]]:
    """The broker settings the schedule needs (two replicas in sync on three brokers, the
    retention family's short offset retention), each with why."""
    found: dict[str, tuple[Any, str]] = dict(REPLICATED) if schedule.layout.brokers > 1 else {}
    for fault in schedule.faults:
        found.update(FAMILIES[fault.family].broker if fault.family in FAMILIES else {})
    return found


def _broker_tables(schedule: Schedule) -> list[str]:
    settings = broker_settings(schedule)
    if not settings:
        return []
    return [
        "[broker]",
        *(f"{toml_value(key)} = {toml_value(value)}" for key, (value, _) in settings.items()),
        "",
        "[broker_needs]",
        *(f"{toml_value(key)} = {toml_value(why)}" for key, (_, why) in settings.items()),
        "",
    ]


def _step_text(step: Step) -> str:
    rest = ", ".join(f"{k}={v}" for k, v in step.items() if k != "do")
    return f"{step['do']}({rest})"
