"""Partitions added under a latest consumer, on real Kafka: the catalog's
partition-expansion-latest with the JVM reference app (the Python one replays as its
``-k incident`` items), judged from ``__consumer_offsets`` and the output alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafka_replay.report.outcome import Outcome

JVM_CLIENT = "kafka-clients==4.4.0"
INCIDENT = "partition-expansion-latest"


@pytest.mark.parametrize(
    "profile",
    [
        pytest.param("vulnerable", id=f"{INCIDENT}-vulnerable"),
        pytest.param("remediated", id=f"{INCIDENT}-remediated", marks=pytest.mark.matrix),
    ],
)
def test_the_jvm_consumer_with_latest_skips_what_came_before_it_learned_of_new_partitions(
    replay_incident: Callable[..., Outcome], profile: str
) -> None:
    outcome = replay_incident(INCIDENT, profile, client_library=JVM_CLIENT)
    assert outcome.app == "BatchForwarder" and outcome.passed, outcome.explain()
    symptoms = outcome.symptoms
    assert symptoms["keys_moved"] >= 1  # the producer wrote to the new partitions
    if profile == "vulnerable":  # both new partitions begun at their end, their start lost
        assert (outcome.result, outcome.verdict) == ("reproduced", "at-most-once")
        assert symptoms["new_partitions_started_past_zero"] == 2, outcome.explain()
        assert symptoms["inputs_lost"] >= 1
    else:  # earliest: the new partitions read from their first record
        assert (outcome.result, outcome.verdict) == ("cured", "exactly-once"), outcome.explain()
        assert symptoms["new_partitions_started_past_zero"] == 0 and symptoms["inputs_lost"] == 0
