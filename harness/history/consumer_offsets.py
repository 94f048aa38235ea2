"""The exact committed-offset history of a group, read from the broker's ``__consumer_offsets``.

What the group coordinator accepted is what it wrote to its log, in order: every commit
(including one that moves an offset backwards) and every tombstone (offset expiry, offset
deletion). Reading that log, rather than asking the group for its current offsets, is the
only way to see a commit that was later overwritten.

Record layouts follow Kafka's ``OffsetCommitKey`` (key types 0 and 1) and
``OffsetCommitValue`` (versions 0 to 4; 4 is the first flexible version).
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from kafka_replay.waiting import wait_for

log = logging.getLogger(__name__)
#: librdkafka's own lines, with every other Kafka client of the harness
CLIENT_LOG = logging.getLogger("kafka_replay.librdkafka")

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_COMMIT_KEY_TYPES = (0, 1)


@dataclass(frozen=True)
class OffsetCommitRecord:
    """One record of ``__consumer_offsets`` about one group's offset for one partition."""

    group: str
    topic: str
    partition: int
    offset: int | None  # None: a tombstone (expired or deleted)
    leader_epoch: int | None
    metadata: str | None
    commit_ts_ms: int | None
    expire_ts_ms: int | None
    log_partition: int
    log_offset: int
    log_ts_ms: int

    @property
    def is_tombstone(self) -> bool:
        return self.offset is None

    def to_event(self) -> dict[str, Any]:
        return {"kind": "tombstone" if self.is_tombstone else "commit", **asdict(self)}


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        length = self.take(">h")
        return None if length < 0 else self._text(length)

    def compact_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self._text(length)

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def _text(self, length: int) -> str:
        text = self.data[self.at : self.at + length].decode()
        self.at += length
        return text


def decode_key(key: bytes) -> tuple[str, str, int] | None:
    """``(group, topic, partition)`` for an offset-commit key; None for other record types."""
    reader = _Reader(key)
    if reader.take(">h") not in OFFSET_COMMIT_KEY_TYPES:
        return None
    group, topic = reader.string(), reader.string()
    return group or "", topic or "", reader.take(">i")


def decode_value(value: bytes | None) -> dict[str, Any] | None:
    """The fields of an ``OffsetCommitValue``; None for a tombstone."""
    if value is None:
        return None
    reader = _Reader(value)
    version = reader.take(">h")
    if not 0 <= version <= 4:
        raise ValueError(f"unknown OffsetCommitValue version {version}")
    fields: dict[str, Any] = {"offset": reader.take(">q"), "leader_epoch": None}
    if version >= 3:
        epoch = reader.take(">i")
        fields["leader_epoch"] = None if epoch < 0 else epoch
    fields["metadata"] = reader.compact_string() if version >= 4 else reader.string()
    fields["commit_ts_ms"] = reader.take(">q")
    expire = reader.take(">q") if version == 1 else -1
    fields["expire_ts_ms"] = None if expire < 0 else expire
    return fields


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit overflow)."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition holding ``group``'s records (Kafka's partitionFor)."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def decode_record(
    key: bytes, value: bytes | None, log_partition: int, log_offset: int, log_ts_ms: int
) -> OffsetCommitRecord | None:
    decoded_key = decode_key(key)
    if decoded_key is None:
        return None
    group, topic, partition = decoded_key
    fields = decode_value(value) or dict.fromkeys(
        ("offset", "leader_epoch", "metadata", "commit_ts_ms", "expire_ts_ms")
    )
    return OffsetCommitRecord(
        group,
        topic,
        partition,
        **fields,
        log_partition=log_partition,
        log_offset=log_offset,
        log_ts_ms=log_ts_ms,
    )


class OffsetsRecorder:
    """Follows ``__consumer_offsets`` in a thread and reports a group's records as they appear.

    ``stop()`` first reads up to the log's end as of that moment, so nothing the coordinator
    wrote before the stop is missed.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        group: str,
        sink: Callable[[dict[str, Any]], None],
        timeout: float = 30.0,
    ) -> None:
        self.group = group
        self._sink = sink
        self._bootstrap = bootstrap_servers
        self._timeout = timeout
        self._stop = threading.Event()
        self._drain = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Consumer | None = None
        self._partition = -1
        self.records: list[OffsetCommitRecord] = []
        self.error: BaseException | None = None

    def start(self) -> OffsetsRecorder:
        self._partition = self._locate_partition()
        self._consumer = Consumer(
            {
                "bootstrap.servers": self._bootstrap,
                "group.id": f"kafka-replay-offsets-reader-{self.group}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",  # aborted transactional commits never took
                "logger": CLIENT_LOG,
            }
        )
        self._consumer.assign([TopicPartition(OFFSETS_TOPIC, self._partition, OFFSET_BEGINNING)])
        self._thread = threading.Thread(target=self._follow, name="offsets-recorder", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[OffsetCommitRecord]:
        """Read to the current end of the log, stop, and return every record seen."""
        if self._thread is None or self._consumer is None:
            return self.records
        self._drain.set()
        self._thread.join(self._timeout)
        self._stop.set()  # if the end was not reached in time, stop anyway
        self._thread.join(self._timeout)
        self._consumer.close()
        self._thread = None
        if self.error is not None:
            raise RuntimeError(f"reading {OFFSETS_TOPIC} failed: {self.error}") from self.error
        return self.records

    def _locate_partition(self) -> int:
        """Make sure ``__consumer_offsets`` exists (asking for the group creates it), find ours."""
        probe = group_reader(self._bootstrap, self.group)

        def partition() -> int | None:
            metadata = probe.list_topics(OFFSETS_TOPIC, timeout=self._timeout)
            topic = metadata.topics.get(OFFSETS_TOPIC)
            if topic is not None and topic.error is None and topic.partitions:
                return coordinator_partition(self.group, len(topic.partitions))
            try:
                probe.committed([TopicPartition(OFFSETS_TOPIC, 0)], timeout=2)
            except KafkaException as exc:  # the coordinator may still be loading
                log.debug("offsets topic not ready: %s", exc)
            return None

        try:
            missing = f"{OFFSETS_TOPIC} did not appear within {self._timeout}s"
            return wait_for(partition, self._timeout, missing, every_s=0.2)
        finally:
            probe.close()

    def _follow(self) -> None:
        """The consumer is used from this thread only: librdkafka calls must not race."""
        assert self._consumer is not None
        ours = TopicPartition(OFFSETS_TOPIC, self._partition)
        end: int | None = None
        try:
            while not self._stop.is_set():
                for message in self._consumer.consume(500, timeout=0.2):
                    error = message.error()
                    if error is None:
                        self._handle(message)
                    elif error.code() != KafkaError._PARTITION_EOF:
                        log.warning("reading %s: %s", OFFSETS_TOPIC, error)
                if self._drain.is_set():
                    if end is None:
                        start, end = self._consumer.get_watermark_offsets(
                            ours, timeout=self._timeout
                        )
                        if start >= end:  # nothing to read: there is no position to wait for
                            return
                    # the position also passes transaction markers, which never arrive as messages
                    if self._consumer.position([ours])[0].offset >= end:
                        return
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def _handle(self, message: Any) -> None:
        record = decode_record(
            message.key(),
            message.value(),
            message.partition(),
            message.offset(),
            message.timestamp()[1],
        )
        if record is not None and record.group == self.group:
            self.records.append(record)
            self._sink(record.to_event())


def group_reader(bootstrap_servers: str, group: str) -> Consumer:
    """A consumer that reads ``group``'s committed offsets without ever joining the group.

    It stands in for librdkafka's admin call for group offsets, which can crash the process
    while the group coordinator is still loading.
    """
    return Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "logger": CLIENT_LOG,
        }
    )
