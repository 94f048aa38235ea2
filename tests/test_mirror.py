"""A mirror and a failover without a broker: what MirrorMaker 2 is told, what a definition may
say of its ``[mirror]``, and client lines folded while a run holds a cluster down. The catalog's
``mirror-failover-offsets`` items replay it against real Kafka and MirrorMaker 2."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafka_replay.apps.mirror_maker import mirror_connectors
from kafka_replay.cluster.client_log import FoldRepeats
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError, Mirror

CATALOG = Path(__file__).parent.parent / "incidents" / "mirror-failover-offsets.toml"


def test_mirror_maker_keeps_topic_names_and_runs_on_compressed_intervals() -> None:
    source, checkpoint = mirror_connectors(
        "127.0.0.1:1", "127.0.0.1:2", ["orders"], ["billing"], 2.0, 50
    ).values()
    assert source["topics"] == "orders" and checkpoint["groups"] == "billing"
    for config in (source, checkpoint):
        assert config["replication.policy.class"].endswith(".IdentityReplicationPolicy")
        assert config["source.cluster.bootstrap.servers"] == "127.0.0.1:1"
        assert config["target.cluster.bootstrap.servers"] == "127.0.0.1:2"
    assert source["offset.lag.max"] == "50"
    assert source["refresh.topics.interval.seconds"] == "2"
    assert checkpoint["sync.group.offsets.enabled"] == "true"
    intervals = ("emit.checkpoints", "sync.group.offsets", "refresh.groups")
    assert {checkpoint[f"{name}.interval.seconds"] for name in intervals} == {"2"}


def _definition(tmp_path: Path, old: str, new: str) -> Path:
    text = CATALOG.read_text()
    assert old in text
    path = tmp_path / CATALOG.name
    path.write_text(text.replace(old, new, 1))
    return path


def test_the_catalogs_mirror_is_read() -> None:
    incident = load_incident(CATALOG)
    assert incident.mirror == Mirror(interval_s=2, offset_lag_max=100)
    assert "fail_over" in [step.do for step in incident.steps]


@pytest.mark.parametrize(
    ("old", "new", "where", "said"),
    [
        ("[mirror]\ninterval_s = 2\noffset_lag_max = 100\n", "", "steps[3]", "needs a [mirror]"),
        ("interval_s = 2", "interval_s = 0.5", "mirror.interval_s", "at least 1"),
        ("offset_lag_max = 100", "offset_lag_max = 0", "mirror.offset_lag_max", "at least 1"),
        ("offset_lag_max = 100", "offsets = 1", "mirror.offsets", "unknown field"),
        ("output = 0", "output = 3", "mirror", "it writes output"),
        (
            'label = "primary lost"',
            'label = "primary lost"\n\n[[steps]]\ndo = "produce"\nworkload = "stream"',
            "steps[4]",
            "no produce after",
        ),
        (
            'label = "primary lost"',
            'label = "primary lost"\n\n[[steps]]\ndo = "fail_over"',
            "steps[4]",
            "fails over once",
        ),
    ],
    ids=[
        "no-mirror",
        "interval",
        "lag-max",
        "unknown-field",
        "output-topic",
        "produce-after",
        "twice",
    ],
)
def test_a_mistake_in_a_mirror_is_named(
    tmp_path: Path, old: str, new: str, where: str, said: str
) -> None:
    with pytest.raises(DefinitionError) as error:
        load_incident(_definition(tmp_path, old, new))
    assert error.value.where == where
    assert said in str(error.value)


def test_a_clients_repeated_line_is_let_through_once_a_window() -> None:
    fold = FoldRepeats(window_s=30)

    def line(text: str) -> bool:
        return fold.filter(logging.LogRecord("c", logging.ERROR, "", 0, text, None, None))

    refused = "FAIL [rdkafka#consumer-1] [thrd:b/1]: Connect failed: Connection refused"
    assert line(refused + " (after 0ms in state CONNECT)")
    assert not line(refused + " (after 3ms in state CONNECT, 1 identical error(s) suppressed)")
    assert line(refused.replace("consumer-1", "consumer-2") + " (after 0ms in state CONNECT)")
    assert line("FAIL [rdkafka#consumer-1] [thrd:b/1]: Disconnected")
