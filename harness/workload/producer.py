"""Produce a workload to Kafka and record which records the broker acknowledged, and where.

Only acknowledged records are expected downstream, so every delivery report becomes an
event: ``ack`` with partition and offset, or ``error``. Keys are partitioned as Kafka's Java
producer would (``murmur2_random``), so records land where a Java service would put them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from .records import Pause, Workload, WorkloadRecord

Sink = Callable[[dict[str, Any]], None]
#: librdkafka's own lines, with every other Kafka client of the harness
CLIENT_LOG = logging.getLogger("harness.librdkafka")

PRODUCER_DEFAULTS: dict[str, Any] = {
    "partitioner": "murmur2_random",
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "logger": CLIENT_LOG,
}


@dataclass
class ProduceStats:
    sent: int = 0
    acked: int = 0
    failed: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.acked / self.seconds if self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0


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
        self._on_event = on_event or (lambda event: None)
        self._producer = Producer(
            {**PRODUCER_DEFAULTS, **(config or {}), "bootstrap.servers": bootstrap_servers}
        )
        self.stats = ProduceStats()

    def run(
        self, workload: Workload, stop: threading.Event | None = None, flush_timeout: float = 60.0
    ) -> ProduceStats:
        """Produce every step of ``workload`` (until ``stop`` is set) and wait for the acks."""
        stop = stop or threading.Event()
        started = time.monotonic()
        paced_from, paced_count = started, 0
        for step in workload.steps():
            if stop.is_set():
                break
            if isinstance(step, Pause):
                self._on_event({"kind": "pause", "seconds": step.seconds})
                self._serve_until(time.monotonic() + step.seconds, stop)
                self._on_event({"kind": "resume"})
                paced_from, paced_count = time.monotonic(), 0
                continue
            if workload.rate:
                self._serve_until(paced_from + paced_count / workload.rate, stop)
                paced_count += 1
            self._send(step)
        remaining = self._producer.flush(flush_timeout)
        self.stats.seconds = time.monotonic() - started
        if remaining:
            self._on_event({"kind": "unacknowledged", "count": remaining})
        return self.stats

    def _serve_until(self, deadline: float, stop: threading.Event) -> None:
        """Wait for a moment while delivering acks; a set ``stop`` cuts the wait short."""
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._producer.poll(min(left, 0.1))

    def _send(self, record: WorkloadRecord) -> None:
        def delivered(error: KafkaError | None, message: Message) -> None:
            identity = {"event_id": record.event_id, "key": record.key, "seq": record.seq}
            if error is not None:
                self.stats.failed += 1
                self._on_event({"kind": "error", **identity, "error": str(error)})
                return
            self.stats.acked += 1
            self.stats.bytes += len(record.value)
            self._on_event(
                {
                    "kind": "ack",
                    **identity,
                    "topic": message.topic(),
                    "partition": message.partition(),
                    "offset": message.offset(),
                    "size": len(record.value),
                }
            )

        while True:
            try:
                self._producer.produce(
                    self.topic,
                    record.value,
                    record.key.encode(),
                    headers=record.headers,
                    on_delivery=delivered,
                )
                break
            except BufferError:  # the local queue is full: let acks drain it
                self._producer.poll(0.1)
        self.stats.sent += 1
        self._producer.poll(0)
