"""The steps of an unclean election: a replica seen to fall out of sync, and made leader once
its partition's in-sync replicas are gone (the mechanics are in
:mod:`kafka_replay.faults.elections`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_replay.definitions.model import Step
from kafka_replay.definitions.vocabulary import Field, StepContext, step_kind
from kafka_replay.faults.elections import elect_unclean, wait_out_of_sync

from .fault_steps import PARTITION, node_named, partition_named, refused
from .stage import Stage, StepFailed


def _node(options: Mapping[str, Any], context: StepContext) -> tuple[str, str] | None:
    return node_named(options, context) or partition_named(options, context)


@step_kind(
    "wait_out_of_sync",
    _node,
    needs="restart_brokers",
    **PARTITION,
    node=Field(int, None),
    timeout_s=Field((int, float), 60.0),
)
def _wait_out_of_sync(stage: Stage, step: Step) -> dict[str, Any]:
    """Wait until a broker is no longer among a partition's in-sync replicas."""
    faults = stage.brokers()
    node = step["node"]
    if node is None:
        if not faults.down:
            raise StepFailed("no broker was killed earlier in this run; name one with node = N")
        node = faults.down[-1]
    with refused():
        return wait_out_of_sync(
            faults.cluster,
            stage.topics[step["topic"]],
            step["partition"],
            node,
            step["timeout_s"],
            stage.stop,
        )


@step_kind(
    "unclean_election",
    partition_named,
    needs="restart_brokers",
    **PARTITION,
    timeout_s=Field((int, float), 60.0),
)
def _unclean_election(stage: Stage, step: Step) -> dict[str, Any]:
    """Make a replica that fell out of sync the leader of a partition with none left in sync."""
    faults = stage.brokers()
    with refused():
        return {
            "topic": stage.topics[step["topic"]],
            **elect_unclean(
                faults.cluster,
                stage.topics[step["topic"]],
                step["partition"],
                step["timeout_s"],
                stage.stop,
            ),
        }
