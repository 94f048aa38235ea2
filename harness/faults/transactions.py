"""Ask the brokers about a topic's transactions, and abort the ones left hanging.

librdkafka (and so confluent-kafka) has no DescribeProducers, ListTransactions,
DescribeTransactions or WriteTxnMarkers, yet a run cannot judge records behind a transaction
that never ends. Kafka's Java ``Admin`` client has them, so a small JVM tool,
``jvm/TransactionAdmin.java``, does the asking: it is compiled once against kafka-clients of
the default Kafka release (cached like the JVM reference apps) and answers one JSON line.

Absent numbers (a coordinator epoch, a transaction start offset or time) are ``-1``, as in the
protocol and ``kafka-transactions.sh``: a producer holds an open transaction on a partition
when its ``currentTransactionStartOffset`` is ``>= 0``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException

from kafka_replay.cluster import Cluster
from kafka_replay.history.stable_offsets import held, stable_ends

from .admin_tools import TIMEOUT_S, run_admin_tool

log = logging.getLogger(__name__)

MAIN_CLASS = "TransactionAdmin"

__all__ = [
    "TransactionAdminError",
    "abort_hanging",
    "abort_transactions",
    "describe_transactions",
    "holders",
]


class TransactionAdminError(RuntimeError):
    """The transaction tool failed; the message carries the tail of what it said on stderr."""


def describe_transactions(bootstrap: str, topic: str, *, timeout: float = TIMEOUT_S) -> dict:
    """What the brokers know of ``topic``'s transactions, to tell a hanging one from a slow one.

    ``{"topic", "partitions": [{"partition", "producers": [{"producerId", "producerEpoch",
    "lastSequence", "lastTimestamp", "coordinatorEpoch", "currentTransactionStartOffset"}]}],
    "transactions": [{"transactionalId", "producerId", "producerEpoch", "state",
    "transactionTimeoutMs", "transactionStartTimeMs", "partitions": [{"topic",
    "partition"}]}]}``: the producers each partition leader keeps (DescribeProducers) and the
    transactions their coordinators hold open (Ongoing, PrepareCommit, PrepareAbort,
    PrepareEpochFence) on at least one partition of ``topic``.
    """
    return _run("describe", bootstrap, topic, timeout=timeout)


def abort_transactions(
    bootstrap: str,
    topic: str,
    partition: int,
    *,
    idle_ms: float = 0,
    timeout: float = TIMEOUT_S,
) -> list[dict]:
    """Abort the open transactions on one partition whose producer wrote nothing for
    ``idle_ms``, so its last stable offset can move on (a live producer's is left alone).

    Done as ``kafka-transactions.sh abort`` (KIP-664): the partition leader writes the abort
    marker, whatever the transaction coordinator thinks. Returns the producers aborted, in
    the shape of ``describe_transactions``'s producers, as they were before the abort.
    """
    answer = _run("abort", bootstrap, topic, str(partition), str(int(idle_ms)), timeout=timeout)
    return answer["aborted"]


def abort_hanging(
    cluster: Cluster, topic: str, idle_s: float, until: Callable[[Callable[[], bool]], bool]
) -> dict[str, Any]:
    """Abort the open transactions on ``topic``'s held partitions whose producer wrote nothing
    for ``idle_s`` (an operator's ``kafka-transactions.sh abort``), then wait with ``until`` for
    each held partition's last stable offset to move past where it stood.

    Returns the partitions held before and after, the producers aborted, and whether every
    held partition was unblocked.
    """
    admin = cluster.admin()
    before = held(stable_ends(admin, topic))
    aborted = [
        producer
        for row in before
        for producer in abort_transactions(
            cluster.bootstrap_servers, topic, row["partition"], idle_ms=idle_s * 1000
        )
    ]
    stood = {row["partition"]: row["lso"] for row in before}

    def unblocked() -> bool:
        try:
            now = {row["partition"]: row["lso"] for row in stable_ends(admin, topic)}
        except KafkaException as exc:  # a request timed out on a loaded machine: ask again
            log.warning("last stable offsets could not be read yet: %s", exc)
            return False
        return all(now[partition] > lso for partition, lso in stood.items())

    return {
        "held_before": before,
        "aborted": aborted,
        "unblocked": until(unblocked) if before else True,
        "held_after": held(stable_ends(admin, topic)),
    }


def holders(bootstrap: str, held: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Who holds each held partition (``topic``, ``partition``, ``lso`` rows): the producer
    whose open transaction begins at the last stable offset, with its transactional id and
    when the transaction began where its coordinator still knows it. A tool that fails gives
    one row with its ``error``: what is held still stands, only who holds it is unknown."""
    found = []
    for topic in sorted({row["topic"] for row in held}):
        try:
            described = describe_transactions(bootstrap, topic)
        except TransactionAdminError as exc:
            return [{"error": str(exc)}]
        by_id = {t["producerId"]: t for t in described["transactions"]}
        producers = {p["partition"]: p["producers"] for p in described["partitions"]}
        for row in (r for r in held if r["topic"] == topic):
            for producer in producers.get(row["partition"], []):
                if producer["currentTransactionStartOffset"] != row["lso"]:
                    continue
                transaction = by_id.get(producer["producerId"], {})
                found.append(
                    {
                        "topic": topic,
                        "partition": row["partition"],
                        "first_offset": row["lso"],
                        "producer_id": producer["producerId"],
                        "producer_epoch": producer["producerEpoch"],
                        "last_write_ms": producer["lastTimestamp"],
                        "transactional_id": transaction.get("transactionalId"),
                        "started_ms": transaction.get("transactionStartTimeMs"),
                        "timeout_ms": transaction.get("transactionTimeoutMs"),
                    }
                )
    return found


def _run(*args: str, timeout: float) -> dict[str, Any]:
    return run_admin_tool(MAIN_CLASS, "transaction.admin", args, timeout, TransactionAdminError)
