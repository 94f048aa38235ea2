"""Static membership on real Kafka: the catalog's static-member-bounce with the JVM reference
app (the Python one replays as its ``-k incident`` items), judged from the coordinator's log,
the supervisor and the output alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_replay.report.outcome import Outcome

JVM_CLIENT = "kafka-clients==4.4.0"


@pytest.mark.parametrize(
    "profile", ["vulnerable", pytest.param("remediated", marks=pytest.mark.matrix)]
)
def test_the_jvm_consumer_sharing_one_static_id_is_fenced_in_turn(
    replay_incident: Callable[..., Outcome], profile: str
) -> None:
    outcome = replay_incident("static-member-bounce", profile, client_library=JVM_CLIENT)
    assert outcome.app == "BatchForwarder" and outcome.passed, outcome.explain()
    symptoms = outcome.symptoms
    if profile == "vulnerable":  # FencedInstanceIdException ends each instance in turn
        assert outcome.result == "reproduced", outcome.explain()
        assert symptoms["static_members_fenced"] >= 1 and symptoms["app_restarts"] >= 1
        log = (Path(outcome.run_dir) / "logs" / "app-0.log").read_text()
        assert "FencedInstanceIdException" in log
    else:  # one member each: nothing fenced, nothing repeated, the bounce waited for its session
        assert (outcome.result, outcome.verdict) == ("cured", "exactly-once"), outcome.explain()
        assert symptoms["static_members_fenced"] == 0 and symptoms["app_restarts"] == 0
        assert symptoms["partition_unread_s"] < 15  # the instance stayed down 15 s
