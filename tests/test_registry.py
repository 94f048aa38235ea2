"""The schema registry: a real Apicurio JVM whose ids the stock Confluent deserializers resolve.

No Kafka broker is needed: values are framed by hand and handed to the deserializers.
"""

from __future__ import annotations

import io
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import fastavro
import psutil
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafka_replay.servers.reaper import LEASE_ENV, reap_orphans
from kafka_replay.workload import schema_registry as registry_module
from kafka_replay.workload.schema_registry import (
    JAVA_HOME_ENV,
    RegistryError,
    SchemaRegistry,
    find_java21,
    frame,
    registry_unavailable,
)
from tests.server_helpers import killed_owner, port_taken_first

needs_java21 = pytest.mark.skipif(
    registry_unavailable() is not None, reason=registry_unavailable() or ""
)

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "items", "type": {"type": "array", "items": "string"}},
    ],
}
ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["id", "amount"],
}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaRegistry]:
    with SchemaRegistry(tmp_path_factory.mktemp("registry")) as running:
        yield running


def _port_is_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now. With SO_REUSEADDR, as servers bind (the
    registry's Vert.x does): connections of ours left in TIME_WAIT do not hold the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_frame_is_confluents_wire_format() -> None:
    assert frame(1, b"xy") == b"\x00\x00\x00\x00\x01xy"
    assert frame(0x01020304, b"") == b"\x00\x01\x02\x03\x04"


def test_the_registry_java_comes_from_its_variable_and_must_be_21_or_newer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_java(name: str, version: str) -> Path:
        home = tmp_path / name
        (home / "bin").mkdir(parents=True)
        java = home / "bin" / "java"
        java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-01-01' >&2\n")
        java.chmod(0o755)
        return home

    monkeypatch.setenv(JAVA_HOME_ENV, str(fake_java("new", "23.0.1")))
    find_java21.cache_clear()
    try:
        assert find_java21() == tmp_path / "new" / "bin" / "java"
        monkeypatch.setenv(JAVA_HOME_ENV, str(fake_java("old", "17.0.2")))
        find_java21.cache_clear()
        assert find_java21() != tmp_path / "old" / "bin" / "java"
    finally:
        find_java21.cache_clear()


def test_without_java21_the_reason_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "find_java21", lambda: None)
    reason = registry_unavailable()
    assert reason is not None
    assert "Java 21+" in reason and JAVA_HOME_ENV in reason
    with pytest.raises(RegistryError, match="Java 21"):
        SchemaRegistry(Path("unused")).start()


@needs_java21
def test_an_avro_value_reads_back_through_the_stock_deserializer(
    registry: SchemaRegistry,
) -> None:
    schema_id = registry.register("orders-value", json.dumps(ORDER))
    order = {"id": "o-1", "amount": 12.5, "items": ["pen", "ink"]}
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(ORDER), order)

    client = SchemaRegistryClient({"url": registry.url})
    deserializer = AvroDeserializer(client)
    context = SerializationContext("orders", MessageField.VALUE)
    assert deserializer(frame(schema_id, body.getvalue()), context) == order
    assert registry.register("orders-value", json.dumps(ORDER)) == schema_id  # known: same id


@needs_java21
def test_a_json_schema_value_reads_back_through_the_stock_deserializer(
    registry: SchemaRegistry,
) -> None:
    schema_id = registry.register("payments-value", json.dumps(ORDER_JSON), "JSON")
    payment = {"id": "p-7", "amount": 3.25}

    client = SchemaRegistryClient({"url": registry.url})
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    context = SerializationContext("payments", MessageField.VALUE)
    assert deserializer(frame(schema_id, json.dumps(payment).encode()), context) == payment


@needs_java21
def test_a_refused_schema_says_why(registry: SchemaRegistry) -> None:
    with pytest.raises(RegistryError, match="refused POST"):
        registry.register("broken-value", "{not a schema")


@needs_java21
def test_stop_ends_the_process_and_frees_its_port(tmp_path: Path) -> None:
    registry = SchemaRegistry(tmp_path).start()
    assert registry.process is not None
    pid, port = registry.process.pid, registry.port
    assert not _port_is_free(port)

    registry.stop()
    assert registry.process.poll() is not None
    assert not psutil.pid_exists(pid)
    assert _port_is_free(port)
    registry.stop()  # a second stop does nothing


@needs_java21
def test_a_java_that_exits_at_once_raises_with_its_log_tail(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(RegistryError, match="exited with") as bad_option:
        SchemaRegistry(tmp_path, jvm_options=["-XX:+NoSuchRegistryOption"]).start()
    assert "NoSuchRegistryOption" in str(bad_option.value)  # the JVM's own words, from the log

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RegistryError, match="exited with") as no_app:
        SchemaRegistry(tmp_path, app_dir=empty).start()
    assert "Unable to access jarfile quarkus-run.jar" in str(no_app.value)
    assert time.monotonic() - started < 20

    with pytest.raises(RegistryError, match="not a directory"):
        SchemaRegistry(tmp_path, app_dir=tmp_path / "missing").start()


@needs_java21
def test_a_port_taken_before_the_registry_binds_it_means_fresh_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        port_taken_first(monkeypatch, registry_module, count=2) as taken,
        SchemaRegistry(tmp_path) as registry,
    ):
        assert registry.port != taken
        assert registry.register("retried-value", '"string"') > 0
    assert "seems to be in use" in (tmp_path / "schema-registry.log").read_text()


@needs_java21
def test_a_crashed_owners_registry_is_reaped(tmp_path: Path) -> None:
    state = killed_owner(
        f"""
        from pathlib import Path
        from kafka_replay.workload.schema_registry import SchemaRegistry

        registry = SchemaRegistry(Path({str(tmp_path)!r}), die_with_owner=False).start()
        state = {{"pid": registry.process.pid, "token": registry.lease.token}}
        """,
        tmp_path,
        "registry",
        timeout=90,
    )
    assert psutil.Process(state["pid"]).environ().get(LEASE_ENV) == state["token"]
    # what it unpacks (native libraries) is in the run's directory, not /tmp, where a kill
    # would leave it
    (scratch,) = [a for a in psutil.Process(state["pid"]).cmdline() if "java.io.tmpdir" in a]
    assert Path(scratch.partition("=")[2]).is_relative_to(tmp_path.resolve()), scratch

    assert state["pid"] in reap_orphans()  # what the next start does first
    assert not psutil.pid_exists(state["pid"]) or (
        psutil.Process(state["pid"]).status() == psutil.STATUS_ZOMBIE
    )
