"""The JVM transaction tool sees a transaction left open by a dead producer, and aborts it.

The producer runs in a child process killed with SIGKILL, so nothing ever ends its
transaction: the partition's last stable offset stays behind the high watermark until the
abort (the coordinator would only time it out after ``transaction.timeout.ms``, 60 s here).
"""

from __future__ import annotations

import select
import signal
import socket
import subprocess
import sys
import time

import pytest
from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_replay.cluster import Cluster
from kafka_replay.faults.transactions import (
    TransactionAdminError,
    abort_transactions,
    describe_transactions,
)
from kafka_replay.waiting import wait_for

OPEN_RECORDS = 5

PRODUCER = """
import sys, time
from confluent_kafka import Producer

bootstrap, topic, transactional_id, count = sys.argv[1:]
producer = Producer({
    "bootstrap.servers": bootstrap,
    "transactional.id": transactional_id,
    "transaction.timeout.ms": 60000,
})
producer.init_transactions(30)
producer.begin_transaction()
for i in range(int(count)):
    producer.produce(topic, f"open-{i}".encode())
assert producer.flush(30) == 0, "records unacknowledged"
print("produced", flush=True)
time.sleep(600)
"""


def _abandon_transaction(bootstrap: str, topic: str, transactional_id: str) -> None:
    """Produce in a transaction from a child process, then kill it before it can end it."""
    child = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, bootstrap, topic, transactional_id, str(OPEN_RECORDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([child.stdout], [], [], 60)
        line = child.stdout.readline() if ready else ""
        if line.strip() != "produced":
            child.kill()
            raise AssertionError(f"the producer did not produce: {child.stderr.read()[-2000:]}")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        child.stdout.close()
        child.stderr.close()


def _offsets(admin: AdminClient, topic: str) -> tuple[int, int]:
    """(last stable offset, high watermark) of partition 0."""
    partition = TopicPartition(topic, 0)

    def latest(isolation: IsolationLevel) -> int:
        futures = admin.list_offsets(
            {partition: OffsetSpec.latest()}, isolation_level=isolation, request_timeout=10
        )
        return futures[partition].result().offset

    return latest(IsolationLevel.READ_COMMITTED), latest(IsolationLevel.READ_UNCOMMITTED)


def _open_producers(described: dict) -> list[dict]:
    return [
        producer
        for partition in described["partitions"]
        for producer in partition["producers"]
        if producer["currentTransactionStartOffset"] >= 0
    ]


def test_an_abandoned_transaction_is_described_then_aborted(
    kafka_cluster: Cluster, kafka_topic, kafka_admin: AdminClient
) -> None:
    topic = kafka_topic("hanging-transaction")
    transactional_id = kafka_cluster.unique_name("abandoned")
    bootstrap = kafka_cluster.bootstrap_servers
    _abandon_transaction(kafka_cluster.client_bootstrap_servers, topic, transactional_id)

    described = describe_transactions(bootstrap, topic)
    assert described["topic"] == topic
    assert [p["partition"] for p in described["partitions"]] == [0]
    [producer] = _open_producers(described)
    assert producer["currentTransactionStartOffset"] == 0
    assert producer["lastSequence"] == OPEN_RECORDS - 1
    [transaction] = described["transactions"]
    assert transaction["transactionalId"] == transactional_id
    assert transaction["producerId"] == producer["producerId"]
    assert transaction["producerEpoch"] == producer["producerEpoch"]
    assert transaction["state"] == "Ongoing"
    assert transaction["transactionTimeoutMs"] == 60000
    assert transaction["transactionStartTimeMs"] > 0
    assert transaction["partitions"] == [{"topic": topic, "partition": 0}]

    stable, high = _offsets(kafka_admin, topic)
    assert (stable, high) == (0, OPEN_RECORDS)  # read_committed readers are stuck at 0

    # its producer wrote within the last ten minutes: an abort of idle producers leaves it be
    assert abort_transactions(bootstrap, topic, 0, idle_ms=600_000) == []
    assert _offsets(kafka_admin, topic) == (0, OPEN_RECORDS)

    aborted = abort_transactions(bootstrap, topic, 0)
    assert [a["producerId"] for a in aborted] == [producer["producerId"]]

    def stable_at_the_end() -> tuple[int, int] | None:
        offsets = _offsets(kafka_admin, topic)
        return offsets if offsets[0] >= offsets[1] else None

    offsets = wait_for(
        stable_at_the_end,
        30,
        lambda: f"last stable offset still behind: {_offsets(kafka_admin, topic)}",
        every_s=0.2,
        error=AssertionError,
    )
    assert offsets[1] == OPEN_RECORDS + 1  # the records and the abort marker

    after = describe_transactions(bootstrap, topic)
    assert _open_producers(after) == []
    # The abort went through the partition leader only: the coordinator still holds the
    # transaction open until transaction.timeout.ms, then aborts it itself (a second marker).
    assert [t["state"] for t in after["transactions"]] == ["Ongoing"]
    assert abort_transactions(bootstrap, topic, 0) == []  # nothing left to abort


def test_an_unreachable_broker_is_a_clear_error_within_the_timeout() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(TransactionAdminError, match=r"describe .* failed") as failure:
        describe_transactions(f"127.0.0.1:{port}", "no-such-topic", timeout=3)
    assert time.monotonic() - started < 25
    assert "TimeoutException" in str(failure.value)
