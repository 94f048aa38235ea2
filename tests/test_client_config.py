"""Client settings in Apache Kafka's names reach an app in either dialect.

Pure logic: no Kafka here (a confluent-kafka client is built, never connected, to show that
librdkafka accepts every translated name).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import confluent_kafka
import pytest

from kafka_replay.apps.client_config import (
    KNOWN,
    batch_size,
    check_client_config,
    distinct_members,
    for_client,
    java_properties,
    librdkafka_config,
    unknown_keys,
)
from kafka_replay.apps.contract import AppContext, AppSpec
from kafka_replay.cluster import Cluster
from kafka_replay.definitions.catalog import catalog_dir, load_incidents
from kafka_replay.waiting import poll

DOCS = Path(__file__).parent.parent / "docs" / "incidents.md"

DEAL_FLOOD = {
    "metadata.max.age.ms": 1000,
    "fetch.max.wait.ms": 1000,
    "fetch.min.bytes": 4000000,
    "max.partition.fetch.bytes": 1048576,
}


def parse_properties(text: str) -> dict[str, str]:
    """Enough of ``java.util.Properties.load`` for the files written here."""
    pairs = {}
    for line in text.splitlines():
        if not line or line.startswith(("#", "!")):
            continue
        key, _, value = re.split(r"(?<!\\)(=)", line, maxsplit=1)
        unescape = re.compile(r"\\(.)")
        pairs[unescape.sub(r"\1", key)] = unescape.sub(r"\1", value)
    return pairs


def test_kafka_names_become_librdkafka_names() -> None:
    assert librdkafka_config(DEAL_FLOOD) == {
        "topic.metadata.refresh.interval.ms": 1000,
        "fetch.wait.max.ms": 1000,
        "fetch.min.bytes": 4000000,
        "max.partition.fetch.bytes": 1048576,
    }


def test_settings_librdkafka_has_no_property_for_are_left_out() -> None:
    config = {"max.poll.records": 100, "request.timeout.ms": 20000, "session.timeout.ms": 3000}
    assert librdkafka_config(config) == {"session.timeout.ms": 3000}
    assert {name for name, s in KNOWN.items() if s.librdkafka is None} == {
        "max.poll.records",
        "request.timeout.ms",
        "default.api.timeout.ms",
    }


def test_values_that_differ_are_translated() -> None:
    sticky = "org.apache.kafka.clients.consumer.StickyAssignor"
    range_ = "org.apache.kafka.clients.consumer.RangeAssignor"
    cooperative = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    assert librdkafka_config({"auto.offset.reset": "none"}) == {"auto.offset.reset": "error"}
    assert librdkafka_config({"auto.offset.reset": "earliest"}) == {"auto.offset.reset": "earliest"}
    assert librdkafka_config({"partition.assignment.strategy": cooperative}) == {
        "partition.assignment.strategy": "cooperative-sticky"
    }
    assert librdkafka_config({"partition.assignment.strategy": f"{sticky}, {range_}"}) == {
        "partition.assignment.strategy": "range"
    }
    assert librdkafka_config({"partition.assignment.strategy": sticky}) == {}
    assert librdkafka_config({"receive.buffer.bytes": -1}) == {"socket.receive.buffer.bytes": 0}


def test_the_properties_text_keeps_kafka_names_and_java_values() -> None:
    config = {**DEAL_FLOOD, "enable.auto.commit": False, "isolation.level": "read_committed"}
    text = java_properties(config)
    assert text.startswith("#")
    assert "fetch.max.wait.ms=1000\n" in text
    assert "enable.auto.commit=false\n" in text
    assert parse_properties(text) == {k: str(v).lower() for k, v in config.items()}
    assert parse_properties(java_properties({})) == {}


def test_properties_values_are_escaped() -> None:
    text = java_properties({"client.rack": " eu:west=1\\a"})
    assert parse_properties(text) == {"client.rack": " eu:west=1\\a"}
    assert "client.rack=\\ eu:west=1\\\\a" in text


def test_the_batch_size_is_max_poll_records() -> None:
    assert batch_size({"max.poll.records": 100, "session.timeout.ms": 3000}) == 100
    assert batch_size(DEAL_FLOOD) is None
    assert batch_size({"fetch.wait.max.ms": 100}) is None  # librdkafka names: none there
    with pytest.raises(ValueError, match="at least 1"):
        batch_size({"max.poll.records": 0})


def test_an_unknown_key_is_a_problem_that_lists_the_known_ones() -> None:
    assert check_client_config(DEAL_FLOOD) is None
    assert unknown_keys({"fetch.wait.max.ms": 1, "colour": 2, "fetch.min.bytes": 1}) == [
        "colour",
        "fetch.wait.max.ms",
    ]
    problem = check_client_config({"colour": 1})
    assert problem is not None
    assert "'colour'" in problem
    assert "max.poll.records" in problem and "fetch.max.wait.ms" in problem
    with pytest.raises(ValueError, match="unknown client setting 'colour'"):
        librdkafka_config({"colour": 1})
    with pytest.raises(ValueError, match="unknown client setting 'colour'"):
        java_properties({"colour": 1})


def test_a_librdkafka_name_is_pointed_at_the_kafka_name() -> None:
    problem = check_client_config({"fetch.wait.max.ms": 100})
    assert problem is not None
    assert "'fetch.wait.max.ms' is librdkafka's name, write 'fetch.max.wait.ms'" in problem
    problem = check_client_config({"topic.metadata.refresh.interval.ms": 100})
    assert problem is not None and "write 'metadata.max.age.ms'" in problem


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"max.poll.records": "100"}, "must be an integer"),
        ({"session.timeout.ms": True}, "must be an integer"),
        ({"fetch.max.wait.ms": 1.5}, "must be an integer"),
        ({"enable.auto.commit": "false"}, "true or false"),
        ({"auto.offset.reset": "smallest"}, "one of earliest, latest, none"),
        ({"isolation.level": "committed"}, "read_uncommitted, read_committed"),
        ({"partition.assignment.strategy": "range"}, "comma-separated list of"),
    ],
)
def test_a_bad_value_is_a_problem(config: dict, says: str) -> None:
    problem = check_client_config(config)
    assert problem is not None and says in problem, problem


def test_every_definition_is_written_in_kafka_names() -> None:
    for incident in load_incidents((catalog_dir(),)).values():
        for profile in incident.profiles.values():
            assert check_client_config(profile.client) is None, (incident.name, profile.name)


def test_the_poll_timeout_fix_is_a_client_setting() -> None:
    incident = load_incidents((catalog_dir(),))["poll-timeout-rebalance"]
    vulnerable, remediated = incident.profiles["vulnerable"], incident.profiles["remediated"]
    assert (batch_size(vulnerable.client), batch_size(remediated.client)) == (500, 100)
    assert vulnerable.app == remediated.app


def test_each_client_gets_its_own_part_of_the_config() -> None:
    config = librdkafka_config(
        {"session.timeout.ms": 3000, "delivery.timeout.ms": 5000, "retry.backoff.ms": 50}
    )
    assert for_client(config, "consumer") == {"session.timeout.ms": 3000, "retry.backoff.ms": 50}
    assert for_client(config, "producer") == {"delivery.timeout.ms": 5000, "retry.backoff.ms": 50}
    assert for_client({"unknown.to.us": 1}, "producer") == {"unknown.to.us": 1}


def test_librdkafka_accepts_every_translated_name() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    for incident in load_incidents((catalog_dir(),)).values():
        for profile in incident.profiles.values():
            config = {"group.id": "g", "bootstrap.servers": "localhost:1"}
            confluent_kafka.Consumer({**config, **librdkafka_config(profile.client)}).close()


def test_the_docs_list_every_setting() -> None:
    text = DOCS.read_text()
    section = text[text.index("## Client settings") :]
    for name, setting in KNOWN.items():
        assert f"| `{name}` |" in section, name
        if setting.librdkafka not in (None, name):
            assert f"`{setting.librdkafka}`" in section, name


def context(tmp_path: Path | None, config: dict) -> AppContext:
    return AppContext("b:9092", "in", "out", "g", config, 1, properties_dir=tmp_path)


def test_the_contract_gives_both_dialects_and_the_batch_size(tmp_path: Path) -> None:
    config = {**DEAL_FLOOD, "max.poll.records": 100}
    env = context(tmp_path, config).env()
    assert json.loads(env["REPLAY_CLIENT_CONFIG"]) == librdkafka_config(config)
    assert env["REPLAY_MAX_POLL_RECORDS"] == "100"
    path = Path(env["REPLAY_CLIENT_PROPERTIES"])
    assert path == tmp_path / "client-1.properties"
    assert parse_properties(path.read_text()) == {k: str(v) for k, v in config.items()}


def test_the_properties_file_is_written_once(tmp_path: Path) -> None:
    app = context(tmp_path, DEAL_FLOOD)
    path = Path(app.env()["REPLAY_CLIENT_PROPERTIES"])
    inode = path.stat().st_ino
    assert app.env()["REPLAY_CLIENT_PROPERTIES"] == str(path)
    assert path.stat().st_ino == inode  # the same text: not written again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["client-1.properties"]


def test_without_a_properties_dir_or_batch_size_those_variables_are_absent() -> None:
    env = context(None, DEAL_FLOOD).env()
    assert "REPLAY_CLIENT_PROPERTIES" not in env and "REPLAY_MAX_POLL_RECORDS" not in env
    assert json.loads(env["REPLAY_CLIENT_CONFIG"])["fetch.wait.max.ms"] == 1000


def test_a_command_may_name_the_properties_file(tmp_path: Path) -> None:
    spec = AppSpec.parse("java -jar app.jar --config {client_properties} --id {instance}")
    argv = spec.command(context(tmp_path, DEAL_FLOOD), "python")
    assert argv == ["java", "-jar", "app.jar", "--config", str(tmp_path / "client-1.properties"),
                    "--id", "1"]  # fmt: skip
    assert (tmp_path / "client-1.properties").is_file()
    with pytest.raises(ValueError, match="client_properties"):
        spec.command(context(None, DEAL_FLOOD), "python")


def test_an_app_reads_back_librdkafka_config_and_the_batch_size(tmp_path: Path) -> None:
    config = {**DEAL_FLOOD, "max.poll.records": 100}
    app = AppContext.from_env(context(tmp_path, config).env())
    assert app.client_config == librdkafka_config(config)
    assert app.max_poll_records == 100
    assert (app.group_id, app.instance) == ("g", 1)
    assert AppContext.from_env(context(None, DEAL_FLOOD).env()).max_poll_records is None


def test_instance_in_a_setting_is_each_instances_number(tmp_path: Path) -> None:
    config = {"group.instance.id": "billing-{instance}", "session.timeout.ms": 6000}
    for instance in (0, 1):
        env = AppContext("b:9092", "in", "out", "g", config, instance, tmp_path).env()
        assert json.loads(env["REPLAY_CLIENT_CONFIG"])["group.instance.id"] == (
            f"billing-{instance}"
        )
        properties = parse_properties(Path(env["REPLAY_CLIENT_PROPERTIES"]).read_text())
        assert properties["group.instance.id"] == f"billing-{instance}"
    assert config["group.instance.id"] == "billing-{instance}"  # the definition's is kept


def test_two_instances_join_as_two_static_members(kafka_cluster: Cluster) -> None:
    """What the broker makes of ``billing-{instance}``: one static member per instance."""
    topic = kafka_cluster.create_topic("static", 2)
    group = kafka_cluster.unique_name("static")
    config = {"group.instance.id": "billing-{instance}", "session.timeout.ms": 10000}
    consumers = []
    for instance in (0, 1):
        context = AppContext(
            kafka_cluster.client_bootstrap_servers, topic, "", group, config, instance
        )
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": context.bootstrap_servers,
                "group.id": group,
                **librdkafka_config(context.client_config),
            }
        )
        consumer.subscribe([topic])
        consumers.append(consumer)
    try:
        admin = kafka_cluster.admin()
        members: list[str | None] = []

        def both_joined() -> bool:
            for consumer in consumers:
                consumer.poll(0.2)  # waits up to 0.2s itself
            try:
                described = admin.describe_consumer_groups([group])[group].result()
            except confluent_kafka.KafkaException:  # e.g. its coordinator still loading
                return False
            members[:] = sorted(m.group_instance_id for m in described.members)
            return len(members) >= 2

        poll(both_joined, 60, every_s=0)  # on a time-out, the assert says who had joined
        assert members == ["billing-0", "billing-1"]
    finally:
        for consumer in consumers:
            consumer.close()


def test_instances_sharing_one_static_id_make_one_member() -> None:
    assert distinct_members({"group.instance.id": "orders"}, 3) == 1
    assert distinct_members({"group.instance.id": "orders-{instance}"}, 3) == 3
    assert distinct_members({}, 3) == 3
