"""Pure logic of the cluster room: versions, broker config, specs. No Kafka needed."""

from __future__ import annotations

import pytest

from kafka_replay.cluster import broker_config
from kafka_replay.cluster.pool import ClusterSpec
from kafka_replay.cluster.versions import (
    DEFAULT_KAFKA_VERSION,
    VERSION_ENV,
    choose_version,
    parse_version,
)


def test_version_choice_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VERSION_ENV, raising=False)
    assert choose_version() == DEFAULT_KAFKA_VERSION
    monkeypatch.setenv(VERSION_ENV, "3.9.2")
    assert choose_version() == "3.9.2"
    assert choose_version("4.0.2") == "4.0.2"


@pytest.mark.parametrize("bad", ["4", "latest", "4.1", "3.8.1", "2.8.0", "4.1.0-rc1"])
def test_unsupported_versions_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
        parse_version(bad)


def test_overrides_cannot_rewire_the_nodes() -> None:
    with pytest.raises(ValueError, match="'listeners' is set by the harness"):
        broker_config.validate_overrides({"listeners": "PLAINTEXT://0.0.0.0:9092"})


def test_override_values_become_strings() -> None:
    assert broker_config.validate_overrides({"a.b": 1, "c": True, "d": "x"}) == {
        "a.b": "1",
        "c": "true",
        "d": "x",
    }


def test_single_node_properties_bind_loopback_and_keep_overrides() -> None:
    node = broker_config.NodeAddress(1, 9092, 9093)
    properties = broker_config.node_properties(node, [node], "/data", {"num.partitions": "6"})
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert properties["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert properties["offsets.topic.replication.factor"] == "1"
    assert properties["group.initial.rebalance.delay.ms"] == "0"
    assert properties["num.partitions"] == "6"


def test_three_nodes_share_one_quorum_and_replicate_internal_topics() -> None:
    nodes = [broker_config.NodeAddress(i, 1000 + i, 2000 + i) for i in (1, 2, 3)]
    properties = broker_config.node_properties(nodes[1], nodes, "/d", {})
    assert properties["node.id"] == "2"
    voters = "1@127.0.0.1:2001,2@127.0.0.1:2002,3@127.0.0.1:2003"
    assert properties["controller.quorum.voters"] == voters
    assert properties["offsets.topic.replication.factor"] == "3"
    assert properties["transaction.state.log.min.isr"] == "2"


def test_properties_text_escapes_what_java_would_misread() -> None:
    text = broker_config.render_properties({"a key": "C:\\dir", "k": "line\nbreak"})
    assert text == "a\\ key=C:\\\\dir\nk=line\\nbreak\n"


def test_equal_requests_share_a_spec() -> None:
    first = ClusterSpec.of("4.0.2", 1, {"b": 2, "a": "1"})
    second = ClusterSpec.of("4.0.2", 1, {"a": 1, "b": "2"})
    assert first == second and hash(first) == hash(second)
    assert ClusterSpec.of("4.0.2", 3) != first


def test_a_kept_cluster_whose_running_broker_refuses_connections_is_not_lent_again() -> None:
    """What the pool decides when a broker runs but no longer takes connections (once seen
    after a restart): a stand-in node on a port held bound, listened on only in between."""
    import socket
    from types import SimpleNamespace

    from kafka_replay.cluster.pool import ClusterPool

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))  # no other process can take the port meanwhile
        node = SimpleNamespace(node_id=1, port=held.getsockname()[1], paused=False,
                               alive=lambda: True)  # fmt: skip
        cluster = SimpleNamespace(nodes=[node])
        assert not ClusterPool._accepting(cluster)  # type: ignore[arg-type]
        held.listen()
        assert ClusterPool._accepting(cluster)  # type: ignore[arg-type]
        node.alive = lambda: False  # a broker down is the restore's business, not this check's
        held.close()
        assert ClusterPool._accepting(cluster)  # type: ignore[arg-type]


def test_feature_levels_make_their_own_storage_template() -> None:
    from kafka_replay.cluster.storage_template import format_options, template_key

    config = {"log.retention.ms": "1000"}
    plain = template_key("4.4.0", config)
    assert template_key("4.4.0", config, {}) == plain  # templates made before stay valid
    pinned = template_key("4.4.0", config, {"transaction.version": 1})
    assert pinned not in (plain, template_key("4.4.0", config, {"transaction.version": 2}))
    assert format_options({"transaction.version": 1, "group.version": 1}) == [
        "--feature", "group.version=1", "--feature", "transaction.version=1",
    ]  # fmt: skip


def test_feature_levels_are_taken_from_kafka_4_on_and_said_when_left_out() -> None:
    from kafka_replay.cluster.embedded import EmbeddedCluster
    from kafka_replay.definitions.catalog import catalog_dir
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.playing.start_up import levels_not_set

    assert EmbeddedCluster.features_refused("4.0.2") is None
    assert "from 4.0 on" in str(EmbeddedCluster.features_refused("3.9.2"))
    with pytest.raises(ValueError, match=r"feature levels cannot be chosen: Kafka 3\.9\.2"):
        EmbeddedCluster("3.9.2", features={"transaction.version": 1})
    spec = ClusterSpec.of("4.4.0", features={"transaction.version": 1})
    assert spec != ClusterSpec.of("4.4.0")
    assert "formatted with transaction.version=1" in spec.describe()
    incident = load_incident(catalog_dir() / "flink-exactly-once-transaction-timeout.toml")
    assert incident.features == {"transaction.version": 1}  # the connector's protocol
    assert levels_not_set(incident, EmbeddedCluster("3.9.2")) == {
        "feature transaction.version=1": str(EmbeddedCluster.features_refused("3.9.2"))
    }
    assert levels_not_set(incident, EmbeddedCluster("4.4.0", features=incident.features)) == {}
