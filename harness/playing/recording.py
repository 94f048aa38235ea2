"""A run's steps played with its recorders on: each group's commits and lag on what it reads,
and the output's last stable offsets, sampled into the run history while the steps act."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_replay.apps import AppStartError
from kafka_replay.history import LagSampler, OffsetsRecorder
from kafka_replay.history.lag import commits_from_samples
from kafka_replay.history.stable_offsets import StableOffsetSampler

from .settling import written
from .stage import Stage, StepFailed, run_steps, stop_background

if TYPE_CHECKING:
    from .run_record import RunRecord

LAG_SAMPLE_S = 0.5


def play_steps(run: RunRecord, progress: Callable[[str], None]) -> None:
    """Run the steps with the recorders on (each group's commits and lag on what it reads);
    :class:`StepFailed` with what stopped them, if anything did."""
    cluster, history, reads, share = run.cluster, run.history, run.reads, run.share_watch
    assert cluster is not None
    apps = run.supervisors
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
        cluster.admin(), written(run.incident, run.topics), history.stream("stable"), LAG_SAMPLE_S
    ).start()
    for supervisor in apps.values():
        supervisor.start(0)  # the instances come from the steps
    stage = Stage(run, random.Random(run.incident.seed), lag_samplers=lags)
    try:
        run_steps(stage, run.incident.steps, progress)
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
