"""Optional instrumentation for Python apps: report rebalances, commits and client errors.

The harness sets ``REPLAY_REPORT_FILE``; each report becomes one event of the run history.
Outside the harness (the variable unset) every call is a cheap no-op, so an app can keep the
instrumentation in production code.

    report = Reporter.from_env()
    consumer = Consumer(report.client_config({...}))
    consumer.subscribe([topic], **report.rebalance_callbacks())
    ...
    report.consumed(batch)                      # what each poll handed over, per partition
    report.commit(consumer, offsets=[...])      # records the attempt, the assignment and the result
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafka_replay.history.store import EventStream

from .contract import INSTANCE, REPORT_FILE


def _partitions(partitions: Sequence[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": p.topic, "partition": p.partition, "offset": p.offset} for p in partitions]


class Reporter:
    """Writes what this app instance's Kafka clients do into the run history."""

    def __init__(self, path: str | None, instance: int = 0) -> None:
        self._stream = EventStream(Path(path)) if path else None
        self.instance = instance
        self.pid = os.getpid()

    @classmethod
    def from_env(cls) -> Reporter:
        return cls(os.environ.get(REPORT_FILE), int(os.environ.get(INSTANCE, "0")))

    @property
    def enabled(self) -> bool:
        return self._stream is not None

    def event(self, kind: str, **fields: Any) -> None:
        if self._stream is not None:
            self._stream.append(
                {"kind": kind, "instance": self.instance, "pid": self.pid, **fields}
            )

    def client_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config`` plus callbacks that report client errors and asynchronous commit results."""
        return {**config, "error_cb": self.client_error, "on_commit": self.commit_result}

    def client_error(self, error: KafkaError) -> None:
        self.event("client_error", code=error.name(), error=error.str(), fatal=error.fatal())

    def consumed(self, messages: Sequence[Any]) -> None:
        """One batch handed to the app: per partition its first and last offset and count."""
        spans: dict[tuple[str, int], list[int]] = {}
        for message in messages:
            if message.error() is None:
                span = spans.setdefault((message.topic(), message.partition()), [])
                span.append(message.offset())
        if spans:
            self.event(
                "consumed",
                partitions=[
                    {"topic": t, "partition": p, "first": o[0], "last": o[-1], "count": len(o)}
                    for (t, p), o in sorted(spans.items())
                ],
            )

    def failure(self, where: str, error: KafkaError) -> None:
        """An error the app got from a call (a failed transaction, a message error)."""
        self.event(
            "app_error",
            where=where,
            code=error.name(),
            error=error.str(),
            fatal=error.fatal(),
            abortable=error.txn_requires_abort(),
        )

    def rebalance_callbacks(
        self,
        on_assign: Callable[[Consumer, list[TopicPartition]], None] | None = None,
        on_revoke: Callable[[Consumer, list[TopicPartition]], None] | None = None,
        on_lost: Callable[[Consumer, list[TopicPartition]], None] | None = None,
    ) -> dict[str, Callable[[Consumer, list[TopicPartition]], None]]:
        """Keyword arguments for ``Consumer.subscribe`` that report, then call yours."""

        def reporting(
            kind: str, user: Callable[[Consumer, list[TopicPartition]], None] | None
        ) -> Callable[[Consumer, list[TopicPartition]], None]:
            def callback(consumer: Consumer, partitions: list[TopicPartition]) -> None:
                self.event(kind, member=_member(consumer), partitions=_partitions(partitions))
                if user is not None:
                    user(consumer, partitions)

            return callback

        return {
            "on_assign": reporting("assigned", on_assign),
            "on_revoke": reporting("revoked", on_revoke),
            "on_lost": reporting("lost", on_lost),
        }

    def commit(
        self,
        consumer: Consumer,
        offsets: list[TopicPartition] | None = None,
        message: Any = None,
    ) -> list[TopicPartition] | None:
        """A synchronous commit, reported with the member's assignment at that moment."""
        committing = offsets
        if committing is None and message is not None:
            committing = [
                TopicPartition(message.topic(), message.partition(), message.offset() + 1)
            ]
        self.event(
            "commit",
            member=_member(consumer),
            offsets=_partitions(committing or []),
            assignment=_partitions(_assignment(consumer)),
        )
        kwargs: dict[str, Any] = {"asynchronous": False}
        if offsets is not None:
            kwargs["offsets"] = offsets
        elif message is not None:
            kwargs["message"] = message
        try:
            result = consumer.commit(**kwargs)
        except KafkaException as exc:
            error = exc.args[0]
            self.event("commit_result", ok=False, code=error.name(), error=error.str())
            raise
        self.commit_result(None, result or [])
        return result

    def commit_result(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if error is None:
            self.event("commit_result", ok=True, offsets=_partitions(partitions))
        else:
            self.event(
                "commit_result",
                ok=False,
                code=error.name(),
                error=error.str(),
                offsets=_partitions(partitions),
            )


def _member(consumer: Consumer) -> str | None:
    try:
        return consumer.memberid()
    except (RuntimeError, KafkaException):
        return None


def _assignment(consumer: Consumer) -> list[TopicPartition]:
    try:
        return consumer.assignment()
    except (RuntimeError, KafkaException):
        return []
