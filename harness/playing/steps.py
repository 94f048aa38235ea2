"""The app and workload steps of an incident's scenario: produce, start and stop the apps,
wait, drain, idle.

Every step kind is one function registered with ``@step_kind``, which declares the fields a
definition may give it (:mod:`kafka_replay.definitions.vocabulary`); the definition reader, the
runner and the docs all take the list of steps from its ``STEPS``. The steps that name faults
are in :mod:`kafka_replay.playing.fault_steps`; what they act on, and the loop that plays them,
in :mod:`kafka_replay.playing.stage`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import ConsumerGroupState, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kafka_replay.apps.client_config import check_client_config
from kafka_replay.definitions.model import Step
from kafka_replay.definitions.vocabulary import Field, StepContext, step_kind
from kafka_replay.history import sample_lag
from kafka_replay.history.consumer_offsets import group_reader
from kafka_replay.history.group import describe_group
from kafka_replay.workload import Workload, WorkloadProducer
from kafka_replay.workload.payloads import PayloadError

from .stage import APP, POLL_S, Stage, StepFailed

log = logging.getLogger(__name__)


def _known_workload(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    if options["workload"] not in context.workloads:
        defined = ", ".join(sorted(context.workloads))
        return "workload", f"no workload {options['workload']!r}; defined: {defined}"
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
    acknowledgements still say where the log ends), but for those acknowledged before an
    unclean election of their partition, whose log it cut back. After a failover, on the
    mirror, to the end of its copy: what was not mirrored is not there to be read.
    """
    acked: dict[tuple[str, int], int] = {}
    truncated = _truncated(stage)
    for ack in [] if stage.failed_over else stage.history.read("produce"):
        if ack["kind"] == "ack" and ack["offset"] is not None:  # a broker may not say where
            where = (ack["topic"], ack["partition"])
            if ack["ts"] < truncated.get(where, 0.0):
                continue  # its offset was given again to a record written after the election
            acked[where] = max(acked.get(where, 0), ack["offset"] + 1)
    if stage.share_watch is not None:  # no commits: the share-partition start offsets
        from .share_group import drained

        by_partition = {partition: end for (_, partition), end in acked.items()}
        done = drained(stage.share_watch, by_partition)
        done.close = lambda: None  # type: ignore[attr-defined]
        return done
    readers = {
        group: group_reader(stage.apps_cluster.bootstrap_servers, group) for group in stage.groups
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


def _truncated(stage: Stage) -> dict[tuple[str, int], float]:
    """When the run's last unclean election of each partition ended, by ``(topic, partition)``:
    the log before it may have been cut back below what was acknowledged."""
    return {
        (step["topic"], step["partition"]): step["ended"]
        for step in stage.history.read("steps")
        if step.get("do") == "unclean_election" and "elected" in step
    }


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


@step_kind("wait_members", budget_s=Field((int, float)), label=Field(str, None))
def _wait_members(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until each service's group has settled with every running instance a member, at
    most ``budget_s`` (a service that assigns itself its partitions joins no group: the run
    goes on once the budget is spent). A broker that names no members (Tansu) is asked only
    whether the group settled."""
    cluster = stage.apps_cluster
    admin = cluster.admin()
    started = time.monotonic()
    wanted = {
        group: len(service.running()) if cluster.lists_group_members else 0
        for service, group in zip(stage.services.values(), stage.groups, strict=False)
    }
    members: dict[str, int] = {}

    def settled() -> bool:
        for group, count in wanted.items():
            description = describe_group(admin, group)
            if description is None or description.state != ConsumerGroupState.STABLE:
                return False
            members[group] = len(description.members or [])
            if members[group] < count:
                return False
        return True

    joined = stage.until(settled, step["budget_s"])
    return {"joined": joined, "members": members, "waited_s": round(time.monotonic() - started, 2)}


@step_kind("idle", seconds=Field((int, float)), label=Field(str, None))
def _idle(stage: Stage, step: Step) -> dict[str, Any]:
    """Nothing happens for that long (a quiet period)."""
    stage.wait(step["seconds"])
    return {}


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
