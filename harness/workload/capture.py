"""Capture a window of a real topic to a file, anonymized, for replay with its own timing.

Every record of the topic whose timestamp falls in ``[start_ms, end_ms)`` is read from every
partition, from the offset ``offsets_for_times`` gives for the start to the one it gives for
the end (or the log's end), as a read-committed reader sees them: records of an aborted or
still open transaction are not part of the traffic an application saw. The window is read as
it stands when the capture starts; a record written later is not waited for. Nothing is
committed: the consumer's group id is a throwaway one.

Up to ``spark_above`` records are read by one consumer and sorted in memory; a larger window
is read by Spark's Kafka source, one task per partition, sorted by Spark and streamed to the
file (see :mod:`.capture_spark`). Both write the same file (:mod:`.capture_file`).

Anonymizing (:mod:`.anonymize`) is keyed by ``secret``, else ``$REPLAY_ANONYMIZE_SECRET``, else
a random secret for this capture only; the header says which ("given" or "random"), never the
secret. Give the same secret to captures whose fakes should agree.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from .anonymize import Anonymizer, PathError
from .capture_file import CapturedRecord, CaptureError, CaptureWriter
from .producer import CLIENT_LOG

__all__ = ["CaptureError", "CaptureSummary", "capture"]

SECRET_ENV = "REPLAY_ANONYMIZE_SECRET"
#: Records between two calls of ``progress``.
PROGRESS_EVERY = 10_000
#: How long Kafka may take to answer a metadata or offsets request.
REQUEST_TIMEOUT_S = 15.0
#: How long a read may go without a record before the capture gives up on it.
STALL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CaptureSummary:
    records: int
    #: the topic's partitions (the file's header says the same)
    partitions: int
    seconds: float
    path: Path
    read_with: Literal["consumer", "spark"]


@dataclass(frozen=True)
class Window:
    """Where a time window lies in a topic: per partition, the offsets ``[first, end)``."""

    topic: str
    partitions: int
    offsets: dict[int, tuple[int, int]]

    @property
    def upper_bound(self) -> int:
        """Records the offsets span: at most the window's records (transaction markers and
        records with out-of-order timestamps are in the span too)."""
        return sum(end - first for first, end in self.offsets.values())


def capture(
    bootstrap: str,
    topic: str,
    start_ms: int,
    end_ms: int,
    out: Path,
    anonymize: Sequence[str] = (),
    anonymize_key: bool = False,
    secret: bytes | None = None,
    spark_above: int = 100_000,
    progress: Callable[[int], None] | None = None,
) -> CaptureSummary:
    """Write the records of ``topic`` stamped in ``[start_ms, end_ms)`` to ``out``.

    ``anonymize``: JSON paths into the values whose values are replaced by stand-ins; each
    must reach a value in at least one record (a typo would otherwise leave originals in the
    file). ``anonymize_key``: keys too, each shape-kept as the value of a field whose name says
    nothing would be, so a key and the same id inside a value get one fake. Raises
    :class:`CaptureError` for a window with no records, an unknown topic or a path found
    nowhere, and then writes no file.
    """
    if start_ms >= end_ms:
        raise CaptureError(f"the window's start {_when(start_ms)} is not before its end")
    if secret is None and os.environ.get(SECRET_ENV):
        secret = os.environ[SECRET_ENV].encode()
    try:
        anonymizer = Anonymizer(anonymize, secret or secrets.token_bytes(32))
    except PathError as exc:
        raise CaptureError(str(exc)) from None
    started = time.monotonic()
    window = find_window(bootstrap, topic, start_ms, end_ms)
    if not window.upper_bound:
        raise _empty(topic, start_ms, end_ms)
    read_with: Literal["consumer", "spark"] = (
        "spark" if window.upper_bound > spark_above else "consumer"
    )
    writer = CaptureWriter(out)  # before the read: an unwritable place fails at once
    records: Iterator[CapturedRecord] = iter(())
    try:
        if read_with == "spark":
            from .capture_spark import read_with_spark

            records = read_with_spark(
                bootstrap, topic, window.offsets, start_ms, end_ms, progress, PROGRESS_EVERY
            )
        else:
            records = read_with_consumer(bootstrap, window, start_ms, end_ms, progress)
        for record in records:
            key = anonymizer.key(record.key) if anonymize_key else record.key
            value = anonymizer.value(record.value)
            writer.write(replace(record, key=key, value=value))
        if not writer.count:
            raise _empty(topic, start_ms, end_ms)
        if missing := anonymizer.missing():
            raise CaptureError(
                f"the anonymize path {', '.join(missing)} is in none of the {writer.count} "
                f"records of {topic} between {_when(start_ms)} and {_when(end_ms)}: check its "
                "spelling (nothing was written)"
            )
        header = {
            "topic": topic,
            "partitions": window.partitions,
            "from_ms": start_ms,
            "to_ms": end_ms,
            "records": 0,  # the count, when the writer knows it
            "anonymized": [path.text for path in anonymizer.paths],
            "key_anonymized": anonymize_key,
            "secret": "given" if secret else "random",
        }
        path = writer.finish(header)
    except BaseException:
        writer.discard()
        raise
    finally:
        close = getattr(records, "close", None)  # stops Spark's stream if it ended early
        if close is not None:
            close()
    seconds = time.monotonic() - started
    return CaptureSummary(writer.count, window.partitions, seconds, path, read_with)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _empty(topic: str, start_ms: int, end_ms: int) -> CaptureError:
    return CaptureError(f"no records in {topic} between {_when(start_ms)} and {_when(end_ms)}")


def _text(exc: KafkaException) -> str:
    """What went wrong, in librdkafka's words, without the error object's repr."""
    error = exc.args[0] if exc.args else exc
    return error.str() if isinstance(error, KafkaError) else str(error)


def _consumer(bootstrap: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kafka-replay-capture-{secrets.token_hex(4)}",  # never joined
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "logger": CLIENT_LOG,
        }
    )


def find_window(bootstrap: str, topic: str, start_ms: int, end_ms: int) -> Window:
    """The offsets of the window in each partition of ``topic`` (which must exist)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": CLIENT_LOG})
    try:
        topics = admin.list_topics(timeout=REQUEST_TIMEOUT_S).topics
    except KafkaException as exc:
        raise CaptureError(f"Kafka at {bootstrap} did not answer: {_text(exc)}") from None
    if topic not in topics:
        raise CaptureError(f"topic {topic} does not exist on {bootstrap}")
    partitions = sorted(topics[topic].partitions)
    consumer = _consumer(bootstrap)
    try:
        firsts = _offsets_at(consumer, topic, partitions, start_ms)
        ends = _offsets_at(consumer, topic, partitions, end_ms)
    finally:
        consumer.close()
    stable = _stable_ends(admin, topic, partitions)
    offsets = {}
    for p in partitions:
        end = stable[p] if ends[p] < 0 else min(ends[p], stable[p])
        if 0 <= firsts[p] < end:
            offsets[p] = (firsts[p], end)
    return Window(topic, len(partitions), offsets)


def _offsets_at(consumer: Consumer, topic: str, partitions: list[int], ms: int) -> dict[int, int]:
    """Per partition, the first offset stamped ``ms`` or later; -1 where there is none."""
    asked = [TopicPartition(topic, p, ms) for p in partitions]
    try:
        found = consumer.offsets_for_times(asked, timeout=REQUEST_TIMEOUT_S)
    except KafkaException as exc:
        raise CaptureError(f"offsets of {topic} at {_when(ms)}: {_text(exc)}") from None
    for tp in found:
        if tp.error is not None:
            raise CaptureError(f"offsets of {topic} [{tp.partition}] at {_when(ms)}: {tp.error}")
    return {tp.partition: tp.offset for tp in found}


def _stable_ends(admin: AdminClient, topic: str, partitions: list[int]) -> dict[int, int]:
    """Per partition, where a read-committed reader ends now (before an open transaction)."""
    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
    futures = admin.list_offsets(
        asked, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=REQUEST_TIMEOUT_S
    )
    try:
        return {tp.partition: future.result().offset for tp, future in futures.items()}
    except KafkaException as exc:
        raise CaptureError(f"the end offsets of {topic}: {_text(exc)}") from None


def read_with_consumer(
    bootstrap: str,
    window: Window,
    start_ms: int,
    end_ms: int,
    progress: Callable[[int], None] | None,
) -> Iterator[CapturedRecord]:
    """The window's records by one consumer, in time order (sorted in memory)."""
    consumer = _consumer(bootstrap)
    topic, records = window.topic, []
    ends = {p: end for p, (_, end) in window.offsets.items()}
    try:
        consumer.assign(
            [TopicPartition(topic, p, first) for p, (first, _) in window.offsets.items()]
        )
        seen, heard = 0, time.monotonic()
        while ends:
            messages = consumer.consume(1000, timeout=0.1)  # returns when full or timed out
            if messages:
                heard = time.monotonic()
            elif time.monotonic() - heard > STALL_TIMEOUT_S:
                raise CaptureError(
                    f"no record of {topic} partitions {sorted(ends)} came in "
                    f"{STALL_TIMEOUT_S:.0f} s; they should reach offsets {ends}"
                )
            for message in messages:
                partition, error = message.partition(), message.error()
                if partition not in ends:
                    continue
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise CaptureError(f"reading {topic} [{partition}]: {error}")
                    del ends[partition]  # the end a read-committed reader may reach
                    continue
                offset = message.offset()
                if offset >= ends[partition]:
                    del ends[partition]
                    continue
                _, ts_ms = message.timestamp()
                if start_ms <= ts_ms < end_ms:
                    records.append(
                        CapturedRecord(
                            partition,
                            offset,
                            ts_ms,
                            message.key(),
                            message.value(),
                            tuple(message.headers() or ()),
                        )
                    )
                if offset + 1 >= ends[partition]:
                    del ends[partition]
                seen += 1
                if progress is not None and seen % PROGRESS_EVERY == 0:
                    progress(seen)
    finally:
        consumer.close()
    records.sort(key=lambda record: record.order)
    return iter(records)
