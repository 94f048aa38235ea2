"""A Kafka Connect worker as the app: its connector submitted with the contract's values, every
listener on 127.0.0.1, and nothing left of it once its instance is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from benchmarks.connect_start import CONNECT, FILE_SINK, file_sink_connector
from kafka_replay.apps import AppContext
from kafka_replay.apps.client_config import java_properties
from kafka_replay.apps.connect_runtime import ConnectError, worker_properties
from kafka_replay.apps.connect_worker import (
    client_properties,
    connector_config,
    read_connector,
    rest_port,
)
from kafka_replay.cluster import Cluster
from kafka_replay.history.group import group_members
from kafka_replay.servers.ports import listening_addresses
from kafka_replay.workload.connect_json import connect_schema, encode_connect_json
from tests.kafka_helpers import eventually, produce_acked


def context(tmp_path: Path, **overrides: object) -> AppContext:
    values: dict = {
        "bootstrap_servers": "127.0.0.1:9092",
        "input_topic": "charges-in",
        "output_topic": "",
        "group_id": "billing",
        "client_config": {"session.timeout.ms": 6000},
        "instance": 0,
        "properties_dir": tmp_path,
        "jdbc_url": "jdbc:postgresql://127.0.0.1:5432/run?user=postgres",
    }
    return AppContext(**{**values, **overrides})


def test_a_document_travels_in_connects_json_envelope_with_its_inferred_schema() -> None:
    document = {"student": "s-1", "amount_cents": 1250, "paid": True, "rate": 0.5,
                "card": {"last4": "4242"}, "tags": ["a"], "note": None}  # fmt: skip
    envelope = json.loads(encode_connect_json(document))
    assert envelope["payload"] == document
    fields = {f["field"]: f for f in envelope["schema"]["fields"]}
    assert envelope["schema"]["type"] == "struct"
    assert {name: f["type"] for name, f in fields.items()} == {
        "student": "string", "amount_cents": "int64", "paid": "boolean", "rate": "double",
        "card": "struct", "tags": "array", "note": "string",
    }  # fmt: skip
    assert fields["note"]["optional"] and not fields["student"]["optional"]
    assert fields["card"]["fields"] == [{"type": "string", "optional": False, "field": "last4"}]
    with pytest.raises(TypeError, match="field when"):
        connect_schema({"when": object()})


def test_the_connector_gets_the_contracts_values_the_overrides_and_the_runs_group(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sink.json"
    path.write_text(json.dumps({"name": "charges", "config": {
        "topics": "{input_topic}", "connection.url": "{jdbc_url}", "tasks.max": 1,
        "insert.mode": "insert"}}))  # fmt: skip
    name, config = read_connector(path)
    submitted = connector_config(config, context(tmp_path), ["insert.mode=upsert"])
    assert name == "charges"
    assert submitted == {
        "topics": "charges-in",
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/run?user=postgres",
        "tasks.max": "1",
        "insert.mode": "upsert",
        "consumer.override.group.id": "billing",
    }
    path.write_text(json.dumps({"name": "charges", "topics": "{topic.orders}"}))
    with pytest.raises(ValueError, match=r"\{topic.orders\}: the incident has no such topic"):
        connector_config(read_connector(path)[1], context(tmp_path), [])
    path.write_text('["not", "a", "connector"]')
    with pytest.raises(ConnectError, match="a JSON object with a name and a config"):
        read_connector(path)


def test_the_workers_settings_keep_every_listener_on_loopback_and_carry_the_client_settings(
    tmp_path: Path,
) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(java_properties({"session.timeout.ms": 6000, "group.instance.id": "a=b"}))
    client = client_properties({"REPLAY_CLIENT_PROPERTIES": str(properties)})
    assert client == {"session.timeout.ms": "6000", "group.instance.id": "a=b"}
    worker = worker_properties(
        bootstrap="127.0.0.1:1", group="orders", rest_port=8083, plugins=[tmp_path],
        client=client, settings={"offset.flush.interval.ms": "10000"},
    )  # fmt: skip
    assert worker["listeners"] == "http://127.0.0.1:8083"
    assert worker["rest.advertised.host.name"] == "127.0.0.1"
    assert worker["consumer.session.timeout.ms"] == "6000"
    assert worker["offset.flush.interval.ms"] == "10000"
    again = worker_properties(
        bootstrap="127.0.0.1:2", group="orders", rest_port=1, plugins=[], client={}, settings={}
    )
    assert worker["group.id"] == again["group.id"]  # every worker of the app's, every restart
    assert "orders" not in worker["group.id"]  # its events are not taken for the app group's


def test_a_restarted_instance_keeps_its_rest_port_while_it_is_free(tmp_path: Path) -> None:
    first = rest_port(tmp_path, 0)
    assert rest_port(tmp_path, 0) == first  # the same worker comes back to Connect
    assert rest_port(tmp_path, 1) != first
    (tmp_path / "connect-worker-2.port").write_text(str(first))
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first))
        taken.listen()
        assert rest_port(tmp_path, 2) != first


def test_a_worker_delivers_its_connectors_records_listens_on_loopback_and_dies_with_its_instance(
    kafka_cluster: Cluster, kafka_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = kafka_topic("connect-in", 1)
    written = tmp_path / "sink.txt"
    connector = file_sink_connector(tmp_path / "file-sink.json", written)
    app = context(tmp_path, bootstrap_servers=kafka_cluster.client_bootstrap_servers,
                  input_topic=topic, group_id=f"connect-{topic}")  # fmt: skip
    produce_acked(kafka_cluster, topic, [(None, f"record-{n}") for n in range(20)])
    log = (tmp_path / "worker.log").open("wb")
    instance = subprocess.Popen(
        [sys.executable, "-m", "kafka_replay.apps.connect_worker", str(connector),
         "--plugin", FILE_SINK, "--version", CONNECT, "--worker", "offset.flush.interval.ms=1000"],
        env={**os.environ, **app.env()}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        lines = lambda: written.read_text().splitlines() if written.exists() else []  # noqa: E731
        eventually(
            lambda: len(lines()) == 20 or instance.poll() is not None, 180, "20 lines", every_s=0.2
        )
        assert lines() == [f"record-{n}" for n in range(20)], (tmp_path / "worker.log").read_text()
        assert group_members(kafka_cluster.admin(), app.group_id) == 1  # the run's group
        (worker,) = psutil.Process(instance.pid).children()
        listening = listening_addresses(worker.pid)
        port = int((tmp_path / "connect-worker-0.port").read_text())
        assert ("127.0.0.1", port) in listening
        assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening
        os.killpg(instance.pid, signal.SIGKILL)  # the supervisor's kill -9 of an instance
        instance.wait(30)
        eventually(
            lambda: not worker.is_running() or worker.status() == "zombie",
            30,
            "no worker",
            every_s=0.2,
        )
    finally:
        if instance.poll() is None:
            os.killpg(instance.pid, signal.SIGKILL)
            instance.wait(30)
        log.close()


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["missing.json"], "cannot read connector missing.json"),
        (["{connector}", "--plugin", "debezium-jdbc"],
         "plugin 'debezium-jdbc' is neither a directory nor Maven coordinates"),
        (["{connector}", "--worker", "offset.flush.interval.ms"],
         "--worker 'offset.flush.interval.ms': expected KEY=VALUE"),
    ],
    ids=["no-connector-file", "bad-plugin", "bad-worker-setting"],
)  # fmt: skip
def test_a_mistake_is_one_error_line_before_any_worker_starts(
    tmp_path: Path, arguments: list[str], says: str
) -> None:
    connector = tmp_path / "sink.json"
    connector.write_text(json.dumps({"name": "sink", "config": {"topics": "{input_topic}"}}))
    given = [argument.replace("{connector}", str(connector)) for argument in arguments]
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.apps.connect_worker", *given],
        env={**os.environ, **context(tmp_path).env()}, cwd=tmp_path, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and says in line, line
    assert result.stdout == ""
