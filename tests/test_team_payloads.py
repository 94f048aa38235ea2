"""A service that accepts only its own order schema, replayed under the catalog's incidents.

``tests/apps/orders.py`` rejects anything but an order (first shown on the built-in
generators' JSON, so a permissive app cannot pass here); its charges drop headers and carry
only ``order_id``, where the payload's ``id_field`` put each record's event_id. It is fed by
a ``--payload`` file of each kind a team writes: its own generator, a JSON Schema, and an
Avro schema registered with a real schema registry (read with the stock deserializer).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.cluster import Cluster, choose_version
from kafka_replay.cluster.backends import choose_backend
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.history import RunHistory
from kafka_replay.report.outcome import Outcome
from kafka_replay.workload import GENERATORS

APPS = Path(__file__).parent / "apps"
SCHEMAS = APPS.parent.parent / "docs" / "examples"

Replay = Callable[..., Outcome]

#: what a team writes in a ``--payload`` file for each way of making its orders
PAYLOADS = {
    "team-generator": 'generator = "tests.apps.order_load:orders"\ncustomers = 12\n',
    "json-schema": f'schema = "{SCHEMAS / "order.schema.json"}"\nkeys = 12\n',
    "avro-registry": f'schema = "{SCHEMAS / "order.avsc"}"\nformat = "avro"\nregistry = true\n',
}
IDENTITY = 'id_field = "order_id"\nkey_field = "customer"\n'
#: the app's reader for each payload
FORMATS = {"team-generator": "json", "json-schema": "json", "avro-registry": "avro-registry"}
#: the order service's flags under each incident: (vulnerable, remediated)
MODES = {
    "poll-timeout-rebalance": ("--work-ms 12", "--work-ms 12"),
    "zombie-commit": (
        "--commit-every-s 1 --work-ms 50",
        "--commit-every-s 1 --work-ms 50 --only-assigned",
    ),
}


def orders_app(payload: str, flags: str) -> str:
    argv = [sys.executable, str(APPS / "orders.py"), "--format", FORMATS[payload]]
    return shlex.join([*argv, *shlex.split(flags)])


def payload_file(tmp_path: Path, payload: str) -> Path:
    path = tmp_path / f"{payload}.toml"
    path.write_text(PAYLOADS[payload] + IDENTITY)
    return path


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_the_order_service_rejects_the_built_in_json(name: str) -> None:
    from tests.apps.orders import Rejected, json_reader

    read = json_reader()
    for record in list(GENERATORS[name]().records())[:20]:
        with pytest.raises(Rejected):
            read(record.value, "orders")


#: CI replays each kind of payload once, under both incidents and both profiles among them;
#: every other combination is the matrix tier (``./dev bench matrix payloads``).
IN_CI = {
    ("vulnerable", "poll-timeout-rebalance", "avro-registry"),
    ("remediated", "zombie-commit", "json-schema"),
    ("vulnerable", "zombie-commit", "team-generator"),
}
COMBINATIONS = [
    pytest.param(
        profile, incident, payload, marks=() if (profile, incident, payload) in IN_CI else
        pytest.mark.matrix, id=f"{profile}-{incident}-{payload}",
    )
    for profile in ("vulnerable", "remediated")
    for incident in sorted(MODES)
    for payload in sorted(PAYLOADS)
]  # fmt: skip


@pytest.mark.parametrize(("profile", "incident", "payload"), COMBINATIONS)
def test_the_order_service_under_the_catalog(
    replay_incident: Replay, tmp_path: Path, incident: str, payload: str, profile: str
) -> None:
    if payload == "avro-registry":
        from kafka_replay.workload.schema_registry import registry_unavailable

        reason = registry_unavailable()
        if reason:
            pytest.skip(reason)
    flags = MODES[incident][profile == "remediated"]
    outcome = replay_incident(
        incident,
        profile,
        app=orders_app(payload, flags),
        payload=payload_file(tmp_path, payload),
        guarantee="at-least-once",
    )
    print(outcome.explain())
    assert outcome.reproduced is (profile == "vulnerable"), outcome.explain()
    if profile == "remediated":  # every order read (the stock deserializer too) and charged
        assert (outcome.passed, outcome.result) == (True, "guarantee held"), outcome.explain()
        assert outcome.anomalies.get("lost", 0) == 0 and outcome.anomalies.get("unexpected", 0) == 0


def watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """Each partition's low and high watermark, asked now."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            for p in range(partitions)
        }
    finally:
        consumer.close()


def test_recorded_orders_replay_under_slow_batches(
    kafka_cluster: Cluster,
    kafka_topic: Callable[..., str],
    kafka_cluster_pool: ClusterPool,
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """Real order traffic captured, anonymized and replayed ten times as fast as the backlog
    of poll-timeout-rebalance: the order service is still kicked out of its group."""
    from kafka_replay.definitions.catalog import catalog_dir
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.definitions.workload_table import read_workload
    from kafka_replay.playing.run_options import RunOptions
    from kafka_replay.playing.runner import run_incident
    from kafka_replay.workload import WorkloadProducer
    from kafka_replay.workload.capture import capture, find_window

    topic = kafka_topic("orders", partitions=3)
    traffic = {"schema": str(SCHEMAS / "order.schema.json"), "count": 1200, "rate": 400.0,
               "keys": 40, "key_field": "customer", "seed": 8}  # fmt: skip
    started_ms = int(time.time() * 1000)
    written = WorkloadProducer(kafka_cluster.bootstrap_servers, topic).run(
        read_workload(Path(__file__), "traffic", traffic)
    )
    assert written.acked == 1200
    recording = tmp_path / "orders.capture"
    ended_ms = int(time.time() * 1000) + 1
    summary = capture(
        kafka_cluster.bootstrap_servers, topic, started_ms, ended_ms,
        recording, anonymize=["$.customer"], anonymize_key=True,
        secret=b"a fixed key: a random one's fakes may match an original name by chance",
    )  # fmt: skip
    # a short capture once read one partition four records short: say where each one ended
    assert summary.records == 1200, (
        find_window(kafka_cluster.bootstrap_servers, topic, started_ms, ended_ms).offsets,
        watermarks(kafka_cluster.bootstrap_servers, topic, 3),
    )
    originals = {json.loads(r.value)["customer"] for r in read_workload(
        Path(__file__), "traffic", traffic).records()}  # fmt: skip
    text = recording.read_text()
    assert not [name for name in originals if json.dumps(name)[1:-1] in text]

    source = (catalog_dir() / "poll-timeout-rebalance.toml").read_text()
    before, _, after = source.partition("[workloads.backlog]")
    recorded = f'[workloads.backlog]\nrecorded = "{recording}"\nspeed = 10\nid_field = "order_id"\n'
    definition = tmp_path / "poll-timeout-rebalance.toml"
    definition.write_text(before + recorded + after[after.index("\n[[steps]]") :])
    outcome = run_incident(
        load_incident(definition),
        "vulnerable",
        cluster_for=kafka_cluster_pool.cluster_for(choose_version(None), choose_backend(None)),
        spark=lambda: spark,
        run_dir=tmp_path / "run",
        options=RunOptions(
            app=orders_app("json-schema", "--work-ms 12"), guarantee="at-least-once"
        ),
    )
    print(outcome.explain())
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()
    steps = RunHistory(Path(outcome.run_dir), create=False).read("steps")
    produced = next(s for s in steps if s.get("do") == "produce" and "sent" in s)
    assert produced["sent"] == 1200 and produced["late_ms_p95"] >= 0
