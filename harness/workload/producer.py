"""Produce a workload to Kafka and record which records the broker acknowledged, and where.

Only acknowledged records are expected downstream, so every delivery report becomes an
event: ``ack`` with partition and offset, or ``error``. Keys are partitioned as Kafka's Java
producer would (``murmur2_random``), so records land where a Java service would put them.

The send loop is meant to keep up with Kafka's own perf test: it serves delivery reports every
:data:`SERVE_EVERY_S` rather than after each send (librdkafka keeps them until asked; an ack's
event, and its ``ts``, comes at most that much later), and a report builds its event only when
someone listens.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from .records import Pause, Workload, WorkloadRecord

Sink = Callable[[dict[str, Any]], None]
#: librdkafka's own lines, with every other Kafka client of the harness
CLIENT_LOG = logging.getLogger("kafka_replay.librdkafka")

#: The workload producer's client id: how a request fault tells its requests from the app's.
WORKLOAD_CLIENT_ID = "kafka-replay-workload"
PRODUCER_DEFAULTS: dict[str, Any] = {
    "client.id": WORKLOAD_CLIENT_ID,
    "partitioner": "murmur2_random",
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "logger": CLIENT_LOG,
}
#: Seconds between two serves of the delivery reports while sending flat out; each serve hands
#: over every report that is ready. A poll after every send, as before, was ~20% slower with
#: 1KB records (median 40k against 51k records/s, runs alternating on one broker).
SERVE_EVERY_S = 0.005


@dataclass
class ProduceStats:
    sent: int = 0
    acked: int = 0
    failed: int = 0
    bytes: int = 0
    seconds: float = 0.0
    #: how late each record sent on a schedule (``at_s``) went out, in seconds
    lateness_s: list[float] = field(default_factory=list, repr=False)

    @property
    def records_per_s(self) -> float:
        return self.acked / self.seconds if self.seconds else 0.0

    def lateness(self) -> dict[str, float] | None:
        """p50, p95 and the most of the schedule's lateness in ms; None without a schedule."""
        late = sorted(self.lateness_s)
        if not late:
            return None
        at = lambda q: round(late[min(len(late) - 1, int(q * len(late)))] * 1000, 1)  # noqa: E731
        return {"late_ms_p50": at(0.5), "late_ms_p95": at(0.95), "late_ms_max": at(1.0)}


class WorkloadProducerFailed(RuntimeError):
    """The workload producer hit an error it cannot go on from (librdkafka's fatal errors: an
    idempotent producer whose sequence numbers the brokers lost, a fenced transactional id)."""


class WorkloadProducer:
    """Sends a workload's records at its rate, honouring its pauses, and reports every ack."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        on_event: Sink | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.topic = topic
        self._on_event = on_event
        self._fatal: KafkaError | None = None
        self._producer = Producer(
            {
                **PRODUCER_DEFAULTS,
                **(config or {}),
                "bootstrap.servers": bootstrap_servers,
                "error_cb": self._on_error,
            }
        )
        self.stats = ProduceStats()
        self._serve_at = 0.0  # time.monotonic() at which to serve the delivery reports next

    def run(
        self, workload: Workload, stop: threading.Event | None = None, flush_timeout: float = 60.0
    ) -> ProduceStats:
        """Produce every step of ``workload`` (until ``stop`` is set) and wait for the acks."""
        stop = stop or threading.Event()
        started = time.monotonic()
        try:
            remaining = self._send_all(workload, stop, started, flush_timeout)
        except (SystemError, KafkaException) as exc:  # a fatal error can surface as either
            raise WorkloadProducerFailed(self._failure(exc)) from exc
        if self._fatal is not None:
            raise WorkloadProducerFailed(self._failure(None))
        self.stats.seconds = time.monotonic() - started
        if remaining:
            self._emit({"kind": "unacknowledged", "count": remaining})
        lateness = self.stats.lateness()
        if lateness:
            self._emit({"kind": "schedule", **lateness})
        return self.stats

    def _send_all(
        self, workload: Workload, stop: threading.Event, started: float, flush_timeout: float
    ) -> int:
        """Send every step of ``workload`` on its schedule; the records still unacknowledged
        after the flush."""
        paced_from, paced_count = started, 0
        for step in workload.steps():
            if stop.is_set():
                break
            if isinstance(step, Pause):
                self._emit({"kind": "pause", "seconds": step.seconds})
                self._serve_until(time.monotonic() + step.seconds, stop)
                self._emit({"kind": "resume"})
                paced_from, paced_count = time.monotonic(), 0
                continue
            if step.at_s is not None:  # a schedule from the start: lateness never adds up
                due = started + step.at_s
                self._serve_until(due, stop)
                self.stats.lateness_s.append(max(0.0, time.monotonic() - due))
            elif workload.rate:
                self._serve_until(paced_from + paced_count / workload.rate, stop)
                paced_count += 1
            self._send(step, workload.timestamp_age_s)
        return self._producer.flush(flush_timeout)

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self._fatal = error

    def _failure(self, raised: Exception | None) -> str:
        said = self._fatal if self._fatal is not None else raised
        return (
            f"the workload producer stopped on a fatal error after {self.stats.acked} acks: "
            f"{said}"
            + (
                " (an idempotent producer whose sequence numbers the brokers lost: give the "
                'incident [producer] "enable.idempotence" = false)'
                if "sequence" in str(said)
                else ""
            )
        )

    def _emit(self, event: dict[str, Any]) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def _serve_until(self, deadline: float, stop: threading.Event) -> None:
        """Wait for a moment while delivering acks; a set ``stop`` cuts the wait short."""
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._producer.poll(min(left, 0.1))

    def _send(self, record: WorkloadRecord, age_s: float | None = None) -> None:
        delivered = partial(self._delivered, record)  # no Python frame between report and count
        stamped = {} if age_s is None else {"timestamp": int((time.time() - age_s) * 1000)}
        while True:
            try:
                self._producer.produce(
                    self.topic,
                    record.value,
                    record.key,
                    headers=record.headers,
                    on_delivery=delivered,
                    **({} if record.partition is None else {"partition": record.partition}),
                    **stamped,
                )
                break
            except BufferError:  # the local queue is full: let acks drain it
                self._producer.poll(0.1)
        self.stats.sent += 1
        now = time.monotonic()
        if now >= self._serve_at:
            self._serve_at = now + SERVE_EVERY_S
            self._producer.poll(0)

    def _delivered(
        self, record: WorkloadRecord, error: KafkaError | None, message: Message
    ) -> None:
        """Count a delivery report and, for a listener, record it as an ``ack`` or ``error``."""
        on_event = self._on_event
        if error is not None:
            self.stats.failed += 1
            if on_event is not None:
                on_event(
                    {
                        "kind": "error",
                        "event_id": record.event_id,
                        "key": record.key,
                        "seq": record.seq,
                        "error": str(error),
                    }
                )
            return
        size = 0 if record.value is None else len(record.value)
        self.stats.acked += 1
        self.stats.bytes += size
        if on_event is not None:
            event = {
                "kind": "ack",
                "event_id": record.event_id,
                "key": record.key,
                "seq": record.seq,
                "topic": message.topic(),
                "partition": message.partition(),
                "offset": message.offset(),
                "size": size,
            }
            if record.expect is not None:  # not once on the output: where, for the checker
                event["expect"] = record.expect
            if record.value is None:  # a tombstone: its key deleted (a final state's check)
                event["delete"] = True
            on_event(event)
