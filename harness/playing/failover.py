"""The ``fail_over`` step: the primary cluster lost and the apps moved to the run's mirror
(:mod:`.mirror`), as a team redeploys its service against its standby cluster."""

from __future__ import annotations

import time
from typing import Any

from kafka_replay.definitions.model import Step
from kafka_replay.definitions.vocabulary import Field, step_kind

from .stage import Stage, StepFailed


@step_kind("fail_over", needs="restart_brokers", label=Field(str, None))
def _fail_over(stage: Stage, step: Step) -> dict[str, Any]:
    """The primary cluster lost: its brokers, MirrorMaker 2 and the apps on it killed, and the
    instances that ran started again against the mirror (``[mirror]``)."""
    mirror = stage.mirror
    if mirror is None:
        raise StepFailed("fail_over needs a [mirror] to move to")
    if stage.failed_over:
        raise StepFailed("the run has already failed over to its mirror")
    started = time.time()
    nodes = stage.brokers().kill_all()
    mirror.stop_mirroring(grace=0)  # what it had copied is all the mirror will have
    services = stage.services
    running = {name: apps.running() for name, apps in services.items()}
    for name, instances in running.items():
        for index in instances:
            stage.app(name or None).stop_instance(index, grace=0)  # gone with the primary
    stage.failed_over = True  # the apps' contexts, readiness and the drain look there now
    for sampler in stage.lag_samplers:  # the group's lag is the mirror's from now on
        sampler.move_to(mirror.bootstrap_servers)
    for name, instances in running.items():
        apps = stage.app(name or None)
        apps.renew_contexts()
        for index in instances:
            apps.start_instance(index)
    moved = time.time()
    # the primary comes back while the service runs on the mirror; nobody fails back to it
    stage.in_background("restore-primary", stage.brokers().restore)
    return {
        "killed_nodes": nodes,
        "moved": {name or "app": instances for name, instances in running.items()},
        "moved_s": round(moved - started, 2),
        "mirror": mirror.bootstrap_servers,
    }
