"""The catalog's definitions: every shipped one loads, and every mistake is named precisely.

Pure logic: no Kafka here. The incidents themselves run as the catalog's items
(``incidents/*.toml``, collected by the plugin).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_replay.definitions.catalog import catalog_dir, load_incidents
from kafka_replay.definitions.command_text import fill_here
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import PROFILES, DefinitionError, SettingNeed


def catalog():
    return load_incidents((catalog_dir(),))


POSTS = {"000_8bf1f8646e2c87d8", "001_336d53de5af32191", "002_d2e544ec6e17ee0b"}
POSTS |= {"003_900f23283aa658db"}

VALID = """
name = "{name}"
title = "t"
post = "000"
guarantee = "at-least-once"
time_scale = "s"

[topics]
input = 3
output = 3

[app]
command = "{{python}} -m kafka_replay_incidents.apps.batch_forwarder"

[workloads.w]
generator = "student_onboarding"
count = 10

[[steps]]
do = "produce"
workload = "w"

[signature]
rejected_commits = ">= 1"

[profiles.vulnerable]
description = "v"

[profiles.remediated]
description = "r"
"""


def write(tmp_path: Path, text: str, name: str = "broken") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace("{name}", name).replace("{{python}}", "{python}"))
    return path


#: Incidents from public write-ups beyond the four posts, each naming its sources by address.
PUBLIC_WRITE_UPS = {
    "leader-loss-acks-one",
    "producer-retry-duplicates",
    "paused-leader-send-expiry",
    "hanging-transaction",
    "protocol-migration",
    "share-group-lock-expiry",
    "static-member-bounce",
    "poison-pill",
    "partition-expansion-latest",
    "record-too-large",
    "rolling-deploy-rebalance-storm",
    "retention-outran-consumer",
    "producer-timestamp-retention",
    "coordinator-errors-commit",
    "min-isr-blocked-sends",
    "connect-sink-restart",
    "mirror-failover-offsets",
    "unclean-leader-election",
    "compacted-state-resurrection",
    "flink-exactly-once-transaction-timeout",
}


def test_the_catalog_covers_every_post() -> None:
    incidents = catalog()
    from_posts = {
        "poll-timeout-rebalance",
        "poll-timeout-rebalance-db",
        "poll-timeout-rebalance-chain",
        "zombie-commit",
        "deal-flood",
        "offset-retention-expiry",
        "transactional-id-expiry",
        "crash-restart-eos",
        "crash-restart-db",
    }
    assert set(incidents) == from_posts | PUBLIC_WRITE_UPS
    assert {incidents[name].post for name in from_posts} == POSTS
    assert all("https://" in incidents[name].post for name in PUBLIC_WRITE_UPS)
    for incident in incidents.values():
        assert tuple(incident.profiles) == PROFILES
        assert incident.signature and incident.time_scale.strip()
        vulnerable, remediated = incident.profiles.values()
        fixed = ("services", "broker", "client", "producer", "topic_config")
        assert [getattr(vulnerable, f) for f in fixed] != [getattr(remediated, f) for f in fixed], (
            f"{incident.name}: the fix must change something"
        )


def test_a_valid_definition_loads(tmp_path: Path) -> None:
    incident = load_incident(write(tmp_path, VALID))
    assert incident.steps[0].do == "produce"
    assert str(incident.signature[0]) == "rejected_commits >= 1"


def test_an_app_that_writes_only_rows_has_no_output_topic(tmp_path: Path) -> None:
    rows_only = VALID.replace(
        "output = 3", 'output = 0\n\n[sink]\ntables = "CREATE TABLE t (event_id text)"\ntable = "t"'
    )
    incident = load_incident(write(tmp_path, rows_only))
    assert "output" not in incident.topics and incident.profiles["vulnerable"].sink is not None


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        (('guarantee = "at-least-once"', 'guarantee = "maybe"'), "guarantee", "one of"),
        (('do = "produce"', 'do = "explode"'), "steps[0].do", "unknown step"),
        (('workload = "w"\n', 'workload = "w"\nspeed = 3\n'), "steps[0].speed", "unknown"),
        (('workload = "w"\n', 'workload = "nope"\n'), "steps[0].workload", "no workload"),
        (
            (
                'do = "produce"\nworkload = "w"',
                'do = "kafka_fault"\napi = "OffsetCommit"\n'
                'action = "kill_sender"\nclients = "workload"',
            ),
            "steps[0].clients",
            'kill_sender needs clients = "app"',
        ),
        (('rejected_commits = ">= 1"', 'no_such = ">= 1"'), "signature.no_such", "unknown"),
        (('rejected_commits = ">= 1"', 'rejected_commits = "lots"'), "signature", "like"),
        (
            ("count = 10", "count = 10\nwidth = 2"),
            "workloads.w.width",
            "bad parameters",
        ),
        (('[profiles.remediated]\ndescription = "r"\n', ""), "profiles", "exactly"),
        (("input = 3", 'input = "three"'), "topics.input", "an integer"),
        (("output = 3", "output = 0"), "topics", "or a [sink] the app writes rows to"),
        (('title = "t"\n', 'title = "t"\ncolour = 1\n'), "colour", "unknown field"),
        (('description = "r"', 'description = "r"\nclinet = 1'), "profiles.remediated", "unknown"),
        (
            ("batch_forwarder", "batch_forwarder --to {output_topik}"),
            "app.command",
            "{output_topik}: no such placeholder",
        ),
        (
            ("batch_forwarder", "batch_forwarder --rules {here}/rules.json"),
            "app.command",
            "rules.json, which does not exist ({here} is ",
        ),
        (
            ("batch_forwarder", "batch_forwarder --rules={here}/rules.json"),
            "app.command",
            "rules.json, which does not exist",
        ),
    ],
)
def test_a_broken_definition_names_the_file_and_field(
    tmp_path: Path, change: tuple[str, str], field: str, says: str
) -> None:
    path = write(tmp_path, VALID.replace(*change))
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert str(path) in str(caught.value)
    assert caught.value.where.startswith(field), caught.value
    assert says in caught.value.problem


#: A profile's own table, added after its description.
REMEDIATED = '[profiles.remediated]\ndescription = "r"\n'
#: A top-level table, added before the workloads.
TOP = "[workloads.backlog]\n"


@pytest.mark.parametrize(
    ("where", "table", "where_named", "says"),
    [
        (TOP, '[client]\n"fetch.wait.max.ms" = 5\n', "client", "unknown client setting"),
        (REMEDIATED, '[profiles.remediated.client]\n"max.poll.records" = "9"\n',
         "profiles.remediated.client", "'max.poll.records' must be an integer"),
        (TOP, '[broker]\n"log.dirs" = [1]\n', "broker.log.dirs", "a string, number or boolean"),
        (REMEDIATED, '[profiles.remediated.producer]\n"acks" = [1]\n',
         "profiles.remediated.producer.acks", "a string, number or boolean"),
        (TOP, '[sink]\ntables = "t"\ntable = "t"\nid_colum = "x"\n', "sink.id_colum",
         "unknown field"),
        (REMEDIATED, '[profiles.remediated.app]\nrestart = "sometimes"\n',
         "profiles.remediated.app.restart", "must be one of always"),
        (REMEDIATED, '[profiles.remediated.app]\ncommand = "{python} {here}/none.py"\n',
         "profiles.remediated.app.command", "none.py, which does not exist"),
        (REMEDIATED, '[profiles.remediated.workloads.backlog]\ntopic = "output"\n',
         "profiles.remediated.workloads.backlog.topic", "is not an input topic"),
        (REMEDIATED, '[profiles.remediated.workloads.burst]\ngenerator = "quiet_events"\nkyes = 2',
         "profiles.remediated.workloads.burst.kyes", "bad parameters for quiet_events"),
        (REMEDIATED, '[profiles.remediated.workloads.backlog]\ntimestamp_age_s = -5\n',
         "profiles.remediated.workloads.backlog.timestamp_age_s", "must be 0 or more seconds"),
        (TOP, '[workloads.old]\ngenerator = "quiet_events"\ntimestamp_age_s = "old"\n',
         "workloads.old.timestamp_age_s", "must be a number of seconds"),
        (TOP, '[topic_config.input]\n"retention.ms" = [1]\n', "topic_config.input.retention.ms",
         "a string, number or boolean"),
        (REMEDIATED, '[profiles.remediated.topic_config.inptu]\n"retention.ms" = 1\n',
         "topic_config.inptu", "names no topic of [topics]"),
    ],
)  # fmt: skip
def test_a_mistake_in_a_merged_table_is_named_where_it_was_written(
    tmp_path: Path, where: str, table: str, where_named: str, says: str
) -> None:
    """A profile's tables are merged over the top level's before they are read; a mistake is
    named at the table the user wrote it in, not at the profile that read the merge."""
    text = VALID.replace("[workloads.w]", "[workloads.backlog]").replace('"w"', '"backlog"')
    text = text.replace(where, table + "\n" + where if where == TOP else where + "\n" + table)
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, text))
    assert caught.value.where == where_named, caught.value
    assert says in caught.value.problem, caught.value


def test_a_misspelt_workload_key_is_named_in_its_own_table(tmp_path: Path) -> None:
    """``[workloads.backlog]`` of the top level is read by both profiles; its key is named
    there, and the same key in a profile's own table is named in that profile's."""
    text = VALID.replace("[workloads.w]", "[workloads.backlog]").replace('"w"', '"backlog"')
    path = write(tmp_path, text.replace("count = 10", "count = 10\nrate_per_s = 5"))
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert str(caught.value).startswith(f"{path}: workloads.backlog.rate_per_s: bad parameters")
    own = REMEDIATED + "\n[profiles.remediated.workloads.backlog]\nrate_per_s = 5\n"
    path = write(tmp_path, text.replace(REMEDIATED, own))
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert caught.value.where == "profiles.remediated.workloads.backlog.rate_per_s"
    client = '[client]\n"max.poll.records" = 5\n\n'  # the top level's is right, the profile's not
    own = REMEDIATED + '\n[profiles.remediated.client]\n"fetch.wait.max.ms" = 5\n'
    path = write(tmp_path, text.replace(REMEDIATED, own).replace(TOP, client + TOP))
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert caught.value.where == "profiles.remediated.client", caught.value


YOUR_APP = '\n[your_app]\ntests = "the app\'s producer"\n'


def test_your_app_sets_step_fields_and_the_signature_for_a_teams_app(tmp_path: Path) -> None:
    text = VALID + YOUR_APP + 'signature = { inputs_lost = ">= 1" }\n'
    text += "\n[your_app.steps.produce]\nbackground = true\n"
    incident = load_incident(write(tmp_path, text))
    theirs = incident.for_your_app()
    assert theirs.steps[0].options["background"] is True
    assert incident.steps[0].options["background"] is False
    assert [str(c) for c in theirs.signature] == ["inputs_lost >= 1"]
    assert "inputs_lost" in incident.symptoms  # measured for every app


def test_your_app_leaves_the_apps_producer_settings_to_the_app(tmp_path: Path) -> None:
    text = VALID.replace(
        'description = "v"\n', 'description = "v"\nclient = { "acks" = "1", "linger.ms" = 5 }\n'
    )
    text += YOUR_APP + 'without_client = ["acks"]\nproducer = { "acks" = "all" }\n'
    incident = load_incident(write(tmp_path, text))
    vulnerable = incident.for_your_app().profiles["vulnerable"]
    assert vulnerable.client == {"linger.ms": 5}
    assert vulnerable.producer["acks"] == "all"
    assert incident.profiles["vulnerable"].client["acks"] == "1"  # the reference app's stay


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ("\n[your_app.steps.drain]\nbudget_s = 1\n", "your_app.steps.drain", "a step this"),
        ("\n[your_app.steps.produce]\nspeed = 1\n", "your_app.steps.produce.speed", "unknown"),
        ("\n[your_app.steps.produce]\nbackground = 1\n", "your_app.steps.produce.background",
         "true or"),  # a field of a team app's step named where it was set, not at steps[0]
        ('signature = { nope = ">= 1" }\n', "your_app.signature.nope", "unknown symptom"),
        ("applied = true\n", "your_app.applied", "unknown field"),
        ("without_client = [1]\n", "your_app.without_client", "setting names"),
        ('\n[your_app.steps.produce]\nworkload = "nope"\n', "your_app.steps.produce.workload",
         "no workload 'nope'"),
    ],
)  # fmt: skip
def test_a_bad_your_app_table_names_the_field(
    tmp_path: Path, extra: str, field: str, says: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, VALID + YOUR_APP + extra))
    assert caught.value.where.startswith(field), caught.value
    assert says in caught.value.problem


def test_the_name_must_match_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace('name = "{name}"', 'name = "other"'))
    with pytest.raises(DefinitionError, match="must match the file name"):
        load_incident(path)


def test_kafka_replay_list_shows_the_catalog() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    for name in catalog():
        assert name in result.stdout


def test_kafka_replay_run_refuses_an_unknown_name() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", "no-such-incident"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "no incident named no-such-incident" in result.stderr
    assert "poll-timeout-rebalance" in result.stderr


WITH_BROKER = '\n[broker]\n"x.y" = 1\n"a.b" = 2\n\n[broker_needs]\n'


def test_broker_needs_say_why_each_setting_is_there(tmp_path: Path) -> None:
    incident = load_incident(write(tmp_path, VALID + WITH_BROKER + '"x.y" = "time: sooner"\n'))
    assert incident.need("x.y") == SettingNeed("time", "sooner")
    assert incident.need("a.b").kind == "essential"  # unexplained: taken as essential


@pytest.mark.parametrize(
    ("needs", "field", "says"),
    [
        ('"c.d" = "time: x"', "broker_needs.c.d", "is not a broker setting of this"),
        ('"x.y" = "vital: x"', "broker_needs.x.y", "KIND one of essential, time, limit"),
        ('"x.y" = "limit:"', "broker_needs.x.y", "'KIND: why"),
        ('"x.y" = 3', "broker_needs.x.y", "'KIND: why"),
    ],
)
def test_a_bad_broker_need_names_the_setting(
    tmp_path: Path, needs: str, field: str, says: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, VALID + WITH_BROKER + needs + "\n"))
    assert caught.value.where == field and says in caught.value.problem, caught.value


def test_features_are_read_as_levels_by_name(tmp_path: Path) -> None:
    text = VALID + '\n[features]\n"transaction.version" = 1\n"group.version" = 0\n'
    incident = load_incident(write(tmp_path, text))
    assert incident.features == {"transaction.version": 1, "group.version": 0}
    assert load_incident(write(tmp_path, VALID)).features == {}


@pytest.mark.parametrize(
    ("feature", "says"),
    [
        ('"metadata.version" = 20', "not metadata.version"),
        ('"transaction" = 1', "ending in .version"),
        ('"Transaction.version" = 1', "ending in .version"),
        ('"transaction.version" = -1', "0 or more"),
        ('"transaction.version" = "1"', "whole number"),
        ('"transaction.version" = true', "whole number"),
    ],
)
def test_a_bad_feature_names_the_field(tmp_path: Path, feature: str, says: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, VALID + f"\n[features]\n{feature}\n"))
    assert caught.value.where.startswith("features.") and says in caught.value.problem


def test_a_command_names_files_beside_its_definition_and_any_contract_placeholder(
    tmp_path: Path,
) -> None:
    (tmp_path / "rules.json").write_text("{}")
    command = (
        "{python} -m kafka_replay_incidents.apps.batch_forwarder --rules {here}/rules.json "
        "--to {output_topic} --also {topic.input} --json '{\"a\": 1}' --connect ${topic}"
    )
    written = '"{{python}} -m kafka_replay_incidents.apps.batch_forwarder"'
    path = write(tmp_path, VALID.replace(written, json.dumps(command)))
    incident = load_incident(path)
    assert incident.profiles["vulnerable"].app.command == command  # filled in when it starts
    assert fill_here(command, tmp_path).split()[4] == f"{tmp_path.resolve()}/rules.json"
