"""The JVM reference apps: compiled once per kafka-clients release, they replay like Python's.

They run on a kafka-clients release other than the broker's (3.9.1 against the default 4.x
broker), chosen with ``client_library`` as ``--client-library`` would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_replay.apps.jvm_apps import (
    JvmAppError,
    compiled_apps,
    java_command,
    kafka_clients_classpath,
)
from kafka_replay.report.outcome import Outcome

CLIENT = "kafka-clients==3.9.1"
Replay = Callable[..., Outcome]


@pytest.mark.parametrize(
    ("incident", "profile", "result"),
    [
        ("zombie-commit", "vulnerable", "reproduced"),
        pytest.param("zombie-commit", "remediated", "cured", marks=pytest.mark.matrix),
        pytest.param("crash-restart-eos", "remediated", "cured", marks=pytest.mark.matrix),
    ],
)
def test_a_jvm_reference_app_replays_its_post(
    replay_incident: Replay, incident: str, profile: str, result: str
) -> None:
    outcome = replay_incident(incident, profile, client_library=CLIENT)
    assert outcome.result == result, outcome.explain()
    assert outcome.passed, outcome.explain()
    assert outcome.app in ("PeriodicCommitter", "EosProcessor")
    log = (Path(outcome.run_dir) / "logs" / "app-0.log").read_text()
    assert "kafka-clients 3.9.1 (" in log


def test_the_classes_are_compiled_once_per_release_and_content(tmp_path: Path) -> None:
    sources = Path("incidents/apps/jvm")
    jars = kafka_clients_classpath("3.9.1")
    first = compiled_apps(sources, jars, "kafka-clients-3.9.1")
    assert compiled_apps(sources, jars, "kafka-clients-3.9.1") == first
    assert (first / "EosProcessor.class").is_file()
    command = java_command(Path("incidents"), "3.9.1")
    assert str(first) in command and "kafka-clients-3.9.1.jar" in command


def test_sources_that_do_not_compile_are_named(tmp_path: Path) -> None:
    (tmp_path / "Broken.java").write_text("public final class Broken { int x = ; }\n")
    with pytest.raises(JvmAppError, match="did not compile") as caught:
        compiled_apps(tmp_path, kafka_clients_classpath("3.9.1"), "kafka-clients-3.9.1")
    assert "Broken.java" in str(caught.value)


def test_no_sources_is_named(tmp_path: Path) -> None:
    with pytest.raises(JvmAppError, match=r"has no \.java files"):
        compiled_apps(tmp_path, kafka_clients_classpath("3.9.1"), "kafka-clients-3.9.1")


def test_a_jvm_command_must_start_with_java(tmp_path: Path) -> None:
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.definitions.model import DefinitionError

    source = Path("incidents/zombie-commit.toml").read_text()
    path = tmp_path / "zombie-commit.toml"
    path.write_text(source.replace('"{java} PeriodicCommitter', '"java PeriodicCommitter'))
    with pytest.raises(DefinitionError, match=r"app\.jvm: must start with \{java\}"):
        load_incident(path)
