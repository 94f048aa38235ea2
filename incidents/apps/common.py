"""What every reference app shares: the contract, the report, SIGTERM, the output record."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterable
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from kafka_replay.apps import AppContext, Reporter
from kafka_replay.apps.client_config import for_client


class Service:
    """One app instance: its context, its report, and whether the harness asked it to stop."""

    def __init__(self) -> None:
        self.context = AppContext.from_env()
        self.report = Reporter.from_env()
        self.stopping = False
        signal.signal(signal.SIGTERM, self._stop)
        print(  # which client release this run's app got (see --client-library)
            f"confluent-kafka {confluent_kafka.__version__} "
            f"(librdkafka {confluent_kafka.libversion()[0]})",
            file=sys.stderr,
            flush=True,
        )

    def _stop(self, *_: object) -> None:
        self.stopping = True

    def consumer(self, **config: Any) -> Consumer:
        """A consumer of the input topic with the incident's client config on top of ``config``.

        The incident's settings are ``REPLAY_CLIENT_CONFIG``: already translated to librdkafka's
        names by the contract (``max.poll.records`` is not among them: see :meth:`poll`'s
        ``count`` and ``AppContext.max_poll_records``).
        """
        base = {
            "bootstrap.servers": self.context.bootstrap_servers,
            "group.id": self.context.group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
            **for_client(self.context.client_config, "consumer"),
        }
        return Consumer(self.report.client_config(base))

    def producer(self, **config: Any) -> Producer:
        """An idempotent producer (a retried send is never written twice), with the incident's
        producer settings (``delivery.timeout.ms``...) on top."""
        return Producer(
            {
                "bootstrap.servers": self.context.bootstrap_servers,
                "linger.ms": 5,
                "enable.idempotence": True,
                **config,
                **for_client(self.context.client_config, "producer"),
            }
        )

    def commit(self, consumer: Consumer, offsets: list[TopicPartition]) -> bool:
        """Commit and report; a refused commit is reported and the service goes on."""
        try:
            self.report.commit(consumer, offsets=offsets)
        except KafkaException:
            return False
        return True

    def poll(self, consumer: Consumer, count: int, timeout: float) -> list[Message]:
        """A batch of good records; message errors (e.g. a missed poll interval) are reported,
        and a fatal one (the consumer cannot go on) ends the instance, for its restart."""
        batch = []
        for message in consumer.consume(count, timeout=timeout):
            if message.error() is not None:
                self.report.client_error(message.error())
                if _fatal(message.error()):  # e.g. fenced by a static member: unusable now
                    raise SystemExit(f"fatal consumer error: {message.error().str()}")
            else:
                batch.append(message)
        self.report.consumed(batch)
        return batch


def _fatal(error: KafkaError) -> bool:
    """Whether the consumer cannot go on: librdkafka hands a fatal error to ``consume`` as an
    error of code ``_FATAL`` whose own ``fatal()`` is false."""
    return error.fatal() or error.code() == KafkaError._FATAL


def result_of(message: Message) -> tuple[bytes, list[tuple[str, bytes]]]:
    """The output for one input: a small JSON result that carries the input's identity: its
    ``event_id`` header, where the harness stamps every record (a team's own messages, given
    with ``--payload``, carry no ``event_id`` field), else the document's field."""
    document = json.loads(message.value())
    stamped = dict(message.headers() or []).get("event_id")
    result = {
        "event_id": stamped.decode() if stamped else document["event_id"],
        "key": document.get("key"),
        "seq": document.get("seq"),
        "source": {"partition": message.partition(), "offset": message.offset()},
    }
    return json.dumps(result).encode(), [("event_id", result["event_id"].encode())]


def next_offsets(messages: Iterable[Message]) -> list[TopicPartition]:
    """The offsets to commit after ``messages``: one past the last of each partition."""
    last: dict[tuple[str, int], int] = {}
    for message in messages:
        last[(message.topic(), message.partition())] = message.offset() + 1
    return [TopicPartition(t, p, o) for (t, p), o in sorted(last.items())]
