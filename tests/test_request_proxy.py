"""The request proxy: Kafka's framing read, and a fault aimed at one request of real traffic.

The pure tests read hand-built frames, count which requests a fault chooses and build an error
answer for every version of each API that takes one. The real ones put the proxy in front of a
broker and lose the answer to a producer's first Produce after the broker appended it: a
producer without idempotence writes the record twice, every time, and an idempotent one once;
they answer a Produce and a commit with errors the broker never sent, and the client takes each
as the broker's; a new idempotent producer whose first batch is refused while its second is
on the wire has the first reported delivered and never written, unless it keeps one request in
flight. The proxy records every request it acted on. Through the engine, a
``kafka_fault`` step loses three of the workload producer's Produce answers in a replay.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kio.index import load_request_schema, load_response_from_request
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32
from pyspark.sql import SparkSession

from kafka_replay.cluster.kafka_answers import (
    ERROR_APIS,
    AnswerError,
    error_answer,
    error_code,
    mirror,
)
from kafka_replay.cluster.kafka_wire import (
    FrameError,
    RequestHeader,
    api_keys,
    api_name,
    parse_request_header,
    response_correlation_id,
)
from kafka_replay.cluster.nodes import NodeCluster
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.cluster.request_proxy import RequestFault, RequestProxy, RequestProxyError
from kafka_replay.definitions.definition import load_incident
from kafka_replay.history import read_stream
from kafka_replay.waiting import wait_for
from tests.fault_incidents import replay_on_pool, write_incident


def request_bytes(api_key: int, version: int, correlation_id: int, client_id: str | None) -> bytes:
    if client_id is None:
        return struct.pack(">hhih", api_key, version, correlation_id, -1) + b"\x00"
    raw = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(raw)) + raw + b"\x00\x01"


def test_a_request_header_is_read_whatever_follows_it() -> None:
    header = parse_request_header(request_bytes(0, 11, 42, "orders-producer"))
    assert header == RequestHeader(0, 11, 42, "orders-producer")
    assert header.api == "Produce"
    assert parse_request_header(request_bytes(22, 5, 7, None)).client_id is None
    assert api_name(26) == "EndTxn" and api_name(9999) == "api-9999"
    assert response_correlation_id(struct.pack(">i", 42) + b"rest") == 42


@pytest.mark.parametrize(
    "frame",
    [b"\x00\x00\x00", struct.pack(">hhih", 0, 9, 1, 20) + b"short"],
    ids=["shorter-than-a-header", "client-id-past-the-end"],
)
def test_bytes_that_are_not_a_request_are_refused(frame: bytes) -> None:
    with pytest.raises(FrameError):
        parse_request_header(frame)


def chosen(fault: RequestFault, headers: list[RequestHeader]) -> list[int]:
    return [h.correlation_id for h in headers if fault.chooses("broker-1", h)]


def test_a_fault_chooses_from_the_nth_matching_request_every_so_often_up_to_its_count() -> None:
    produces = [RequestHeader(0, 11, i, "app-1") for i in range(1, 11)]
    fault = RequestFault("Produce", "lose_answer", nth=2, every=3, count=2)
    assert chosen(fault, produces) == [2, 5]
    assert fault.matched == 10 and fault.acted == 2


def test_a_fault_passes_other_apis_clients_and_brokers_by() -> None:
    fault = RequestFault("Produce", "cut", clients=("app-",), count=None)
    headers = [
        RequestHeader(1, 17, 1, "app-1"),  # a Fetch
        RequestHeader(0, 11, 2, "workload"),  # another client
        RequestHeader(0, 11, 3, None),
        RequestHeader(0, 11, 4, "app-2"),
    ]
    assert chosen(fault, headers) == [4]
    elsewhere = RequestFault("Produce", "cut", brokers=frozenset({"broker-2"}))
    assert chosen(elsewhere, headers) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"api": "Produse", "action": "cut"}, "'Produse' is not an API"),
        (
            {"api": "Produce", "action": "drop"},
            "'drop' is not one of lose_answer, error, delay, cut",
        ),
        ({"api": "Produce", "action": "cut", "nth": 0}, "at least 1"),
    ],
    ids=["unknown-api", "unknown-action", "nth-zero"],
)
def test_a_fault_that_cannot_be_done_says_why(options: dict[str, object], message: str) -> None:
    with pytest.raises(RequestProxyError, match=message):
        RequestFault(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("api", ERROR_APIS)
def test_an_error_answer_is_built_for_every_version_of_each_api_that_takes_one(api: str) -> None:
    """Each version's request (its arrays empty) gets an answer kio reads back: the request's
    correlation id, and the error wherever the answer has an error code."""
    versions = schema_name_map[api_key_map[api_keys()[api]]]
    for version in versions:
        request_type = load_request_schema(api_keys()[api], version)
        out = io.BytesIO()
        header_type = request_type.__header_schema__
        entity_writer(header_type)(
            out,
            header_type(
                request_api_key=i16(api_keys()[api]),
                request_api_version=i16(version),
                correlation_id=i32(41),
                client_id="app",
            ),
        )
        entity_writer(request_type)(out, mirror(request_type, None, ErrorCode.none))
        answer = error_answer(out.getvalue(), error_code("COORDINATOR_NOT_AVAILABLE"))
        answer_type = load_response_from_request(request_type)
        header, size = entity_reader(answer_type.__header_schema__)(answer, 0)
        body, _ = entity_reader(answer_type)(answer, size)
        assert header.correlation_id == 41
        errors = [
            getattr(body, f.name)
            for f in dataclasses.fields(body)
            if f.metadata.get("kafka_type") == "error_code"
        ]
        assert all(e == ErrorCode.coordinator_not_available for e in errors), (version, body)


@pytest.fixture
def proxied(
    kafka_cluster_factory: Callable[..., NodeCluster],
) -> tuple[NodeCluster, RequestProxy]:
    """A broker whose clients reach it through its proxy only (it advertises the proxy's port)."""
    cluster = kafka_cluster_factory(brokers=1, network_faults=True).start()
    assert cluster.proxy is not None
    return cluster, cluster.proxy


def copies_written(cluster: NodeCluster, topic: str) -> list[bytes]:
    """Every record of the topic's partition 0, read past the proxy."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "check",
            "enable.auto.commit": False,
        }
    )
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        while len(values) < end:
            message = consumer.poll(10)
            assert message is not None, f"read {len(values)} of {end} records"
            assert message.error() is None, message.error()
            values.append(message.value())
        return values
    finally:
        consumer.close()


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain-producer", "idempotent-producer"])
def test_a_lost_produce_answer_writes_twice_unless_the_producer_is_idempotent(
    proxied: tuple[NodeCluster, RequestProxy], idempotent: bool
) -> None:
    cluster, proxy = proxied
    topic = cluster.create_topic("lost-answer", 1)
    proxy.add_fault(RequestFault("Produce", "lose_answer", clients=("weak-producer",)))
    producer = Producer(
        {
            "bootstrap.servers": cluster.client_bootstrap_servers,
            "client.id": "weak-producer",
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 0,
        }
    )
    reports: list[object] = []
    producer.produce(topic, b"order-1", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(60) == 0
    assert reports == [None], "the retried send is acknowledged"
    assert copies_written(cluster, topic) == ([b"order-1"] if idempotent else [b"order-1"] * 2)
    [action] = proxy.actions
    assert (action["action"], action["api"], action["client_id"]) == (
        "lose_answer",
        "Produce",
        "weak-producer",
    )


def test_a_produce_answered_with_an_error_is_retried_and_written_once(
    proxied: tuple[NodeCluster, RequestProxy],
) -> None:
    """The broker never sees the Produce answered NOT_ENOUGH_REPLICAS: the client retries it
    (the error is retriable) and the record is written once."""
    cluster, proxy = proxied
    topic = cluster.create_topic("error-answer", 1)
    proxy.add_fault(
        RequestFault("Produce", "error", clients=("app",), error=error_code("NOT_ENOUGH_REPLICAS"))
    )
    producer = Producer(
        {"bootstrap.servers": cluster.client_bootstrap_servers, "client.id": "app", "linger.ms": 0}
    )
    reports: list[object] = []
    producer.produce(topic, b"order-1", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(60) == 0
    assert reports == [None]
    assert copies_written(cluster, topic) == [b"order-1"]
    [action] = proxy.actions
    assert (action["action"], action["api"], action["error"]) == ("error", "Produce", 19)


#: How long each answer of the broker is held, so that a second Produce is on the wire before
#: the first one's answer comes back (it is sent a few milliseconds after the first).
ANSWER_DELAY_MS = 2000


@pytest.mark.parametrize("in_flight", [5, 1], ids=["five-in-flight", "one-in-flight"])
def test_a_refused_first_batch_is_lost_but_reported_delivered_unless_one_request_in_flight(
    proxied: tuple[NodeCluster, RequestProxy], in_flight: int
) -> None:
    """An idempotent producer's first batch to a partition is refused (NOT_ENOUGH_REPLICAS: not
    written, retriable) while its second batch is already sent. The broker takes the second as
    the first of a producer it has no state for (it accepts any sequence from one), and
    librdkafka, seeing a later batch acknowledged, reports the earlier one delivered without
    sending it again: a record reported delivered that no broker holds. With one request in
    flight the second waits for the first's answer and both are written. This is why
    min-isr-blocked-sends' remediated profile keeps one request in flight."""
    cluster, proxy = proxied
    topic = cluster.create_topic("refused-first-batch", 2)
    producer = Producer(
        {
            "bootstrap.servers": cluster.client_bootstrap_servers,
            "client.id": "app",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "max.in.flight.requests.per.connection": in_flight,
        }
    )
    producer.produce(topic, b"warm-up", partition=1)  # its id and the partitions' leader known
    assert producer.flush(60) == 0
    proxy.add_toxic(
        "broker-1", "slow-answers", "latency", "from_broker", {"latency": ANSWER_DELAY_MS}
    )
    proxy.add_fault(
        RequestFault("Produce", "error", clients=("app",), error=error_code("NOT_ENOUGH_REPLICAS"))
    )
    reports: dict[bytes, object] = {}

    def delivered(err: KafkaError | None, msg: object) -> None:
        reports[msg.value()] = err  # type: ignore[attr-defined]

    producer.produce(topic, b"order-0", partition=0, on_delivery=delivered)
    producer.poll(0)
    wait_for(  # the first batch is on the wire, refused
        lambda: bool(proxy.actions),
        30,
        "the producer sent nothing",
        every_s=0.01,
        error=AssertionError,
    )
    later = [f"order-{n}".encode() for n in range(1, 5)]
    for value in later:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    proxy.remove_toxic("broker-1", "slow-answers")
    assert reports == dict.fromkeys([b"order-0", *later]), "every send is reported delivered"
    written = copies_written(cluster, topic)
    assert written == (later if in_flight > 1 else [b"order-0", *later])


def test_a_commit_answered_not_coordinator_fails_and_the_broker_keeps_the_last_one(
    proxied: tuple[NodeCluster, RequestProxy],
) -> None:
    """A synchronous commit answered NOT_COORDINATOR fails with that error; the group's offset
    stays where the commit before it put it, and the next commit lands."""
    cluster, proxy = proxied
    topic = cluster.create_topic("commit-errors", 1)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.client_bootstrap_servers,
            "client.id": "app",
            "group.id": "orders",
            "enable.auto.commit": False,
        }
    )
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        fault = RequestFault(
            "OffsetCommit", "error", count=None, error=error_code("NOT_COORDINATOR")
        )
        proxy.add_fault(fault)
        with pytest.raises(KafkaException) as failed:  # after the client's own retries
            consumer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=False)
        proxy.remove_fault(fault)
        assert failed.value.args[0].code() == KafkaError.NOT_COORDINATOR
        assert consumer.committed([partition], timeout=10)[0].offset == 5
        consumer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=False)
        assert consumer.committed([partition], timeout=10)[0].offset == 9
    finally:
        consumer.close()
    assert fault.acted >= 1
    assert {(a["api"], a["action"], a["error"]) for a in proxy.actions} == {
        ("OffsetCommit", "error", 16)
    }


@pytest.mark.parametrize(
    ("api", "error", "message"),
    [
        ("Produce", "NOT_ENOUGH_REPLICA", "'NOT_ENOUGH_REPLICA' is not an error"),
        ("Metadata", "NOT_COORDINATOR", "needs an error code and one of Produce"),
    ],
    ids=["unknown-error", "api-without-an-error-answer"],
)
def test_an_error_answer_that_cannot_be_built_says_why(api: str, error: str, message: str) -> None:
    with pytest.raises((RequestProxyError, AnswerError), match=message):
        RequestFault(api, "error", error=error_code(error))


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPool]:
    pool = ClusterPool(tmp_path_factory.mktemp("requests"))
    try:
        yield pool
    finally:
        pool.close()


LOST_PRODUCE_ANSWERS = """do = "kafka_fault"
api = "Produce"
action = "lose_answer"
clients = "workload"
nth = 20
every = 10
count = 3"""


# the same fault through the engine as producer-retry-duplicates' two catalog items, which CI
# runs: ./dev bench matrix requests (made room for Flink's items)
@pytest.mark.matrix
@pytest.mark.parametrize("idempotent", [False, True], ids=["plain-producer", "idempotent-producer"])
def test_the_engine_loses_three_produce_answers_of_the_workload_and_records_each(
    tmp_path: Path, pool: ClusterPool, spark: SparkSession, idempotent: bool
) -> None:
    producer = f'[producer]\n"enable.idempotence" = {str(idempotent).lower()}'
    definition = write_incident(
        tmp_path, "lost-answers", [LOST_PRODUCE_ANSWERS], brokers=f"brokers = 1\n\n{producer}"
    )
    assert load_incident(definition).network_faults  # the step gets the brokers' proxies
    outcome, _ = replay_on_pool(definition, pool, spark, tmp_path / "run")
    assert outcome.failed_stage is None, outcome.explain()
    (fault,) = [
        s
        for s in read_stream(tmp_path / "run" / "events" / "steps.jsonl")
        if s["do"] == "kafka_fault"
    ]
    assert fault["acted"] == 3 and fault["matched"] >= 40
    assert {(r["api"], r["action"], r["client_id"]) for r in fault["requests"]} == {
        ("Produce", "lose_answer", "kafka-replay-workload")
    }
    check = json.loads((tmp_path / "run" / "check.json").read_text())
    written_twice = check["anomalies"]["log_duplicate"]["count"]
    assert written_twice == 0 if idempotent else written_twice >= 3, written_twice
    assert check["anomalies"]["lost"]["count"] == 0


def test_a_fault_waiting_on_an_app_without_partitions_says_which_instance_holds_none(
    tmp_path: Path, pool: ClusterPool, spark: SparkSession
) -> None:
    """A fault on the app's requests that times out names each instance given no partition
    (an idle consumer sends no commit), so the wait's failure says where to look."""
    stop = 'do = "stop_apps"'
    commits = "\n".join(
        ['do = "kafka_fault"', 'api = "OffsetCommit"', 'action = "error"',
         'error = "NOT_COORDINATOR"', 'clients = "app"', "timeout_s = 12"]
    )  # fmt: skip
    definition = write_incident(tmp_path, "idle-app", [stop, commits], brokers="brokers = 1")
    outcome, _ = replay_on_pool(definition, pool, spark, tmp_path / "run")
    assert outcome.failed_stage == "steps", outcome.explain()
    assert outcome.error is not None
    assert "the OffsetCommit fault acted 0 of 1 times within 12s" in outcome.error
    assert re.search(r"; meanwhile app-0 has held no partition for \d+ s$", outcome.error)


COMMIT_KILLS_SENDER = """do = "kafka_fault"
api = "OffsetCommit"
action = "kill_sender"
clients = "app"
nth = 3"""


def test_a_service_killed_once_its_commit_is_applied_loses_what_it_committed_before_writing(
    tmp_path: Path, pool: ClusterPool, spark: SparkSession
) -> None:
    """kill_sender: the broker applies the commit, its answer is held back and the instance that
    sent it is killed; a service that commits before it writes loses that batch, every time."""
    quick_rejoin = (
        'brokers = 1\n\n[client]\n"session.timeout.ms" = 6000\n"heartbeat.interval.ms" = 1000'
    )
    definition = write_incident(
        tmp_path, "killed-at-commit", [COMMIT_KILLS_SENDER], brokers=quick_rejoin
    )
    app = f"{sys.executable} -m tests.apps.flawed commit-first"
    definition.write_text(
        definition.read_text().replace(
            '"{python} -m kafka_replay_incidents.apps.batch_forwarder"', json.dumps(app)
        )
    )
    outcome, _ = replay_on_pool(definition, pool, spark, tmp_path / "run")
    assert outcome.failed_stage is None, outcome.explain()
    (fault,) = [
        s
        for s in read_stream(tmp_path / "run" / "events" / "steps.jsonl")
        if s["do"] == "kafka_fault"
    ]
    (killed,) = fault["killed"]
    assert fault["unanswered"] == 0
    assert killed["instance"] == 0 and killed["app"] == "app"
    assert [r["client_port"] for r in fault["requests"]] == [killed["port"]]
    lifecycle = read_stream(tmp_path / "run" / "events" / "lifecycle.jsonl")
    assert any(e["kind"] == "signal" and e["signal"] == "SIGKILL" for e in lifecycle)
    check = json.loads((tmp_path / "run" / "check.json").read_text())
    assert check["anomalies"]["lost"]["count"] > 0
