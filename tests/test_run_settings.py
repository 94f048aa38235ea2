"""Run settings: declared once, parsed, checked, and handed to a child unchanged. Pure."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from kafka_replay.definitions.app_option import GivenApp
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.pytest_plugin import keyword_options
from kafka_replay.replay.settings import COMPARE, PYTEST, RUN, RunSettings, add_to_parser, options


def parsed(argv: list[str], face: str = RUN) -> RunSettings:
    parser = argparse.ArgumentParser()
    add_to_parser(parser, face)
    return RunSettings.from_args(parser.parse_args(argv), face)


GIVEN = [
    "--app", "python -m myapp", "--guarantee", "exactly-once", "--group-protocol", "consumer",
    "--restart", "every:5", "--client-config", "max.poll.records=10", "--client-config",
    "enable.auto.commit=false", "--broker-config", "group.initial.rebalance.delay.ms=0",
    "--scale", "2", "--settle-timeout", "30", "--kafka-version", "3.9.2",
    "--kafka-backend", "tansu", "--incidents", "team/incidents", "--jobs", "2",
]  # fmt: skip


def test_a_childs_argv_gives_the_child_the_same_settings() -> None:
    settings = parsed(GIVEN)
    assert settings.kafka_backend.startswith("tansu:")  # the release is chosen once, here
    again = parsed(settings.argv())
    assert again.to_json() == settings.to_json()


def test_a_setup_adds_to_repeatable_settings_and_replaces_the_others() -> None:
    settings = parsed(GIVEN).with_argv(
        ["--kafka-version", "4.0.2", "--client-config", "max.poll.records=500"]
    )
    assert settings.kafka_version == "4.0.2"
    assert settings.client_config[-1] == "max.poll.records=500"
    assert settings.run_options().client["max.poll.records"] == 500
    assert settings.app == "python -m myapp"


def test_the_engines_options_come_from_the_settings() -> None:
    run = parsed(GIVEN).run_options()
    assert run.app == GivenApp("--app", "python -m myapp", None, "python -m myapp")
    assert (run.guarantee, run.group_protocol, run.restart) == (
        "exactly-once",
        "consumer",
        "every:5",
    )
    assert run.client == {"max.poll.records": 10, "enable.auto.commit": False}
    assert run.broker == {"group.initial.rebalance.delay.ms": 0}
    assert run.settle_timeout_s == 30.0
    assert run.settings["scale"] == 2


def test_each_field_the_engine_reads_is_declared_by_one_option() -> None:
    """An option is declared once, in ``OPTIONS``: its ``engine`` names the field of
    ``RunOptions`` it fills, and no field is filled by hand or by two options."""
    filled = [option.engine for option in options() if option.engine]
    fields = {f.name for f in dataclasses.fields(RunOptions)} - {"settings"}
    assert sorted(filled) == sorted(fields)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scale", "0"], "--scale must be 1 or more, got 0"),
        (["--settle-timeout", "-1"], "--settle-timeout must be 0 or more seconds, got -1.0"),
        (["--jobs", "0"], "--jobs must be 1 or more, got 0"),
        (["--restart", "sometimes"], "sometimes"),
        (["--client-config", "max.poll.records"], "--client-config expects KEY=VALUE"),
        (["--broker-config", "process.roles=controller"], "process.roles"),
    ],
)
def test_a_bad_setting_is_refused_saying_why(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parsed(argv)


def test_each_face_offers_its_options() -> None:
    names = {face: {o.name for o in options(face)} for face in (RUN, COMPARE, PYTEST)}
    shared = {"app", "guarantee", "kafka_backend", "client_config", "settle_timeout"}
    assert all(shared <= offered for offered in names.values())
    assert "report" in names[RUN] and "report" not in names[COMPARE]
    assert "setup" in names[PYTEST] and "setup" not in names[RUN]
    assert "profile" not in names[PYTEST]  # pytest selects with -k


def test_a_password_reaches_a_child_through_its_environment_not_its_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = "postgresql://team:s3cret@127.0.0.1:5432/orders"
    settings = parsed([*GIVEN, "--database-url", url])
    assert not any("s3cret" in arg for arg in settings.argv())  # `ps` would show it
    environment = settings.child_environment()
    assert environment == {"KAFKA_REPLAY_DATABASE_URL": url}
    monkeypatch.setenv("KAFKA_REPLAY_DATABASE_URL", url)  # what the child inherits
    assert parsed(settings.argv()).to_json() == settings.to_json()
    assert "s3cret" not in str(settings.to_json())


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"guarantee": "twice"}, "--guarantee is one of exactly-once, at-least-once, got 'twice'"),
        ({"group_protocol": "kip848"}, "--group-protocol is one of classic, consumer"),
        ({"app": " "}, "--app is empty"),
        ({"payload": "no-such.toml"}, "--payload no-such.toml: no such file"),
        ({"client_library": "kafka-python==2.0"}, "give confluent-kafka==VERSION"),
    ],
    ids=["guarantee", "group_protocol", "app", "payload", "client_library"],
)
def test_a_replay_keyword_is_refused_as_its_option(keywords: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        keyword_options(parsed(GIVEN), keywords)


def test_the_replay_keywords_go_over_the_settings() -> None:
    run = keyword_options(
        parsed(GIVEN),
        {"guarantee": "at-least-once", "client": {"max.poll.records": 7}, "settle_timeout_s": 5.0},
    )
    assert (str(run.app), run.guarantee, run.settings["guarantee"]) == (
        "python -m myapp", "at-least-once", "at-least-once"
    )  # fmt: skip
    assert run.client == {"max.poll.records": 7}  # as given: a RunOptions field, not an option
    assert run.settle_timeout_s == 5.0


def test_a_setup_keeps_a_setting_its_options_do_not_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_REPLAY_DATABASE_URL", "postgresql://env@127.0.0.1/other")
    mine = "postgresql://team@127.0.0.1/orders"
    settings = parsed([*GIVEN, "--database-url", mine]).with_argv(["--kafka-version", "4.0.2"])
    assert settings.database_url == mine  # not the environment's default
