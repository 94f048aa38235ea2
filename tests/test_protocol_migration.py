"""KIP-848's online migration: instances rolled from the classic protocol to ``consumer``.

The ``restart_instance`` step rolls one instance onto new client settings; the catalog's
``protocol-migration`` replays the roll with the JVM reference app on kafka-clients 4.4.0 (the
Python app's runs are the definition's own pytest items), and a definition's mistakes in the
step are named before anything starts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_replay.apps import AppContext, AppSpec, RestartPolicy, Supervisor
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.replay.compare import Setup
from kafka_replay.report.outcome import Outcome
from tests.kafka_helpers import eventually

CLIENT = "kafka-clients==4.4.0"
Replay = Callable[..., Outcome]
SOURCE = Path("incidents/protocol-migration.toml")
STEP = 'do = "restart_instance"\ninstance = 0\nclient = { "group.protocol" = "consumer" }'


def _lifecycle(outcome: Outcome) -> list[dict[str, object]]:
    path = Path(outcome.run_dir) / "events" / "lifecycle.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_jvm_app_keeping_classic_settings_never_joins_as_a_consumer_member(
    replay_incident: Replay,
) -> None:
    outcome = replay_incident("protocol-migration", "vulnerable", client_library=CLIENT)
    assert outcome.result == "reproduced", outcome.explain()
    assert outcome.app == "PeriodicCommitter"
    log = (Path(outcome.run_dir) / "logs" / "app-0.log").read_text()
    assert "kafka-clients 4.4.0 (" in log
    assert "cannot be set when group.protocol=CONSUMER" in log  # the client's own refusal
    rolled = [e for e in _lifecycle(outcome) if e["kind"] == "reconfigure"]
    assert [e["instance"] for e in rolled] == [0, 1]
    assert all(e["config"]["group.protocol"] == "consumer" for e in rolled)
    properties = (Path(outcome.run_dir) / "client-1.properties").read_text()
    assert "group.protocol=consumer" in properties and "session.timeout.ms=6000" in properties


@pytest.mark.matrix  # CI: the JVM app keeping classic settings; the catalog's two items
def test_the_jvm_app_without_them_migrates_and_loses_nothing(replay_incident: Replay) -> None:
    outcome = replay_incident("protocol-migration", "remediated", client_library=CLIENT)
    assert outcome.result == "cured", outcome.explain()
    assert outcome.passed, outcome.explain()
    assert outcome.symptoms["consumer_protocol_joins"] == 2, outcome.explain()
    assert outcome.symptoms["group_conversions"] >= 1, outcome.explain()


#: An app that prints what the contract gave it, then waits for SIGTERM.
SHOW_CONTRACT = (
    "import os, signal, sys, time; "
    "print(os.environ['REPLAY_CLIENT_CONFIG'], open(os.environ['REPLAY_CLIENT_PROPERTIES'])"
    ".read().splitlines()[1:], flush=True); "
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); time.sleep(60)"
)


def test_a_restarted_instance_gets_its_new_settings_in_both_dialects(tmp_path: Path) -> None:
    events: list[dict[str, object]] = []
    apps = Supervisor(
        AppSpec(argv=(sys.executable, "-c", SHOW_CONTRACT)),
        lambda i: AppContext(
            "127.0.0.1:9",
            "in",
            "out",
            "g",
            {"session.timeout.ms": 6000},
            i,
            properties_dir=tmp_path,
        ),
        tmp_path / "logs",
        on_event=events.append,
        policy=RestartPolicy(startup_s=0.5),
    )
    with apps.start(1):
        apps.restart_instance(0, {"group.protocol": "consumer"})
        log = tmp_path / "logs" / "app-0.log"
        eventually(
            lambda: log.read_text().count("session.timeout.ms") >= 4,
            20,
            "the restarted instance printing its new settings in app-0.log",
        )
    first, second = [line for line in log.read_text().splitlines() if "{" in line]
    assert first == """{"session.timeout.ms": 6000} ['session.timeout.ms=6000']"""
    assert second == (
        """{"session.timeout.ms": 6000, "group.protocol": "consumer"} """
        "['session.timeout.ms=6000', 'group.protocol=consumer']"
    )
    kinds = [e["kind"] for e in events]
    assert kinds[:5] == ["start", "stop", "exit", "reconfigure", "start"], kinds
    assert events[3]["client"] == {"group.protocol": "consumer"}


def test_on_kafka_3_9_the_migration_does_not_apply(replay_incident: Replay) -> None:
    """3.9 has the consumer protocol off by default: there is nothing to migrate to."""
    outcome = replay_incident(
        "protocol-migration", "remediated", setup=Setup("kafka=3.9.2", kafka="3.9.2")
    )
    assert not outcome.applicable and outcome.result == "not applicable", outcome.explain()
    assert "group.protocol=consumer" in outcome.reasons[0] and "3.9.2" in outcome.reasons[0]


def _with_step(tmp_path: Path, step: str) -> Path:
    text = SOURCE.read_text()
    first = text.index('[[steps]]\ndo = "restart_instance"')
    end = text.index("[[steps]]", first + 1)
    path = tmp_path / SOURCE.name
    path.write_text(text[:first] + "[[steps]]\n" + step + "\n\n" + text[end:])
    return path


def test_the_step_reads_its_instance_and_settings(tmp_path: Path) -> None:
    incident = load_incident(_with_step(tmp_path, STEP))
    step = next(s for s in incident.steps if s.do == "restart_instance")
    assert dict(step.options) == {
        "instance": 0,
        "client": {"group.protocol": "consumer"},
        "app": None,
        "label": None,
    }


@pytest.mark.parametrize(
    ("client", "problem"),
    [
        ('{ "group.protocol" = "kip848" }', "'group.protocol' must be one of classic, consumer"),
        ('{ "session.timeout" = 3000 }', "unknown client setting 'session.timeout'"),
        ('"consumer"', "must be"),
    ],
)
def test_a_mistake_in_the_step_settings_is_named(tmp_path: Path, client: str, problem: str) -> None:
    step = STEP.replace('{ "group.protocol" = "consumer" }', client)
    with pytest.raises(DefinitionError) as caught:
        load_incident(_with_step(tmp_path, step))
    assert caught.value.where == "steps[3].client"
    assert problem in caught.value.problem


def test_the_step_needs_its_instance(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(_with_step(tmp_path, STEP.replace("instance = 0\n", "")))
    assert (caught.value.where, caught.value.problem) == ("steps[3].instance", "is required")


#: Lines the 4.4.0 group coordinator wrote while the remediated run migrated its group.
MIGRATION_LOG = """\
[2026-11-25T22:07:04,979] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=5] \
[GroupId pm-1] Converted the classic group to a consumer group. \
(org.apache.kafka.coordinator.group.GroupMetadataManager)
[2026-11-25T22:07:04,979] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=5] \
[GroupId pm-1] Member IXaGwWJ4RUqWNJnQBIouyQ joins the consumer group using the consumer protocol. \
(org.apache.kafka.coordinator.group.GroupMetadataManager)
[2026-11-25T22:07:06,674] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=5] \
[GroupId pm-1] Member consumer-pm-1-1-c64f6e44-6b66-4a07-9a60-100af7239d9e joins the consumer \
group using the classic protocol. (org.apache.kafka.coordinator.group.GroupMetadataManager)
"""


def test_the_coordinator_log_tells_the_conversion_and_each_members_protocol(
    tmp_path: Path,
) -> None:
    from kafka_replay.history.broker_log import group_events

    log = tmp_path / "broker-1.log"
    log.write_text(MIGRATION_LOG)
    events = [{k: v for k, v in e.items() if k != "ts"} for e in group_events([log], "pm-1")]
    assert events == [
        {"kind": "converted", "from": "classic", "to": "consumer"},
        {"kind": "joined", "member": "IXaGwWJ4RUqWNJnQBIouyQ", "protocol": "consumer"},
        {
            "kind": "joined",
            "member": "consumer-pm-1-1-c64f6e44-6b66-4a07-9a60-100af7239d9e",
            "protocol": "classic",
        },
    ]
