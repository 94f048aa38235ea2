"""A run's steps played with its recorders on: each group's commits and lag on what it reads,
and the output's last stable offsets, sampled into the run history while the steps act."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kafka_replay.apps import AppStartError, Supervisor
from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import Incident, Profile
from kafka_replay.history import LagSampler, OffsetsRecorder, RunHistory
from kafka_replay.history.lag import commits_from_samples
from kafka_replay.history.stable_offsets import StableOffsetSampler

from .settling import written
from .stage import Stage, StepFailed, run_steps, stop_background

if TYPE_CHECKING:
    from kafka_replay.faults.share_group_admin import ShareGroupWatch

    from .mirror import RunMirror
    from .services import Serving

LAG_SAMPLE_S = 0.5


def play_steps(
    incident: Incident,
    profile: Profile,
    cluster: Cluster,
    history: RunHistory,
    topics: dict[str, str],
    reads: Mapping[str, tuple[str, ...]],
    apps: Mapping[str, Supervisor],
    progress: Callable[[str], None],
    share: ShareGroupWatch | None = None,
    mirror: RunMirror | None = None,
    serving: Serving | None = None,
) -> None:
    """Run the steps with the recorders on (each group's commits and lag on what it reads);
    :class:`StepFailed` with what stopped them, if anything did."""
    recorders = []
    if cluster.has_offsets_topic and share is None:  # else the lag samples give the commits
        recorders = [
            OffsetsRecorder(cluster.bootstrap_servers, group, history.stream("offsets")).start()
            for group in reads
        ]
    lags = (  # a share group's lag comes from its watch (see share_group)
        [
            LagSampler(
                cluster.bootstrap_servers, group, read, history.stream("lag"), LAG_SAMPLE_S
            ).start()
            for group, read in reads.items()
        ]
        if share is None
        else []
    )
    stable = StableOffsetSampler(
        cluster.admin(), written(incident, topics), history.stream("stable"), LAG_SAMPLE_S
    ).start()
    for supervisor in apps.values():
        supervisor.start(0)  # the instances come from the steps
    group = list(reads)[-1]
    first = next(iter(apps.values()))
    stage = Stage(cluster, history, profile, topics, group, first, random.Random(incident.seed))
    stage.share_watch, stage.services, stage.reads = share, dict(apps), dict(reads)
    stage.mirror, stage.serving, stage.lag_samplers = mirror, serving, lags
    try:
        run_steps(stage, incident.steps, progress)
        stage.check()
    except (StepFailed, AppStartError) as exc:
        raise StepFailed(str(exc)) from exc
    finally:
        stop_background(stage)
        for supervisor in apps.values():
            supervisor.stop()
        for lag in lags:
            lag.stop()
        if share is not None:  # its last look is in the lag stream before that is read
            share.stop()
        stable.stop()
        for recorder in recorders:
            recorder.stop()
        if not recorders:  # a share group's lag samples hold where the broker is done with them
            for event in commits_from_samples(history.read("lag")):
                history.stream("offsets").append(event)
