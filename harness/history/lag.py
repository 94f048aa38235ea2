"""Consumer lag as an outside monitor (Burrow, kafka-consumer-groups) would see it, over time."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from .consumer_offsets import group_reader

log = logging.getLogger(__name__)


def sample_lag(
    reader: Consumer, group: str, topic: str | Sequence[str], timeout: float = 10.0
) -> list[dict[str, Any]]:
    """Per partition of the topic (of each topic): the group's committed offset, the log start
    and end offsets, and the lag (end minus committed).

    ``reader`` is a :func:`~kafka_replay.history.consumer_offsets.group_reader` of ``group``.
    """
    if not isinstance(topic, str):
        return [row for each in topic for row in sample_lag(reader, group, each, timeout)]
    partitions = sorted(reader.list_topics(topic, timeout=timeout).topics[topic].partitions)
    wanted = [TopicPartition(topic, p) for p in partitions]
    committed = {tp.partition: tp.offset for tp in reader.committed(wanted, timeout=timeout)}
    samples = []
    for partition in partitions:
        start, end = reader.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        offset = committed.get(partition, -1)
        samples.append(
            {
                "group": group,
                "topic": topic,
                "partition": partition,
                "committed": offset if offset >= 0 else None,
                "start": start,
                "end": end,
                "lag": end - offset if offset >= 0 else end,
            }
        )
    return samples


class LagSampler:
    """Samples a group's lag on its input topics every ``interval`` seconds until stopped."""

    def __init__(
        self,
        bootstrap_servers: str,
        group: str,
        topic: str | Sequence[str],
        sink: Callable[[dict[str, Any]], None],
        interval: float = 1.0,
    ) -> None:
        self.group, self.topic, self.interval = group, topic, interval
        self._sink = sink
        self._reader = group_reader(bootstrap_servers, group)
        self._moved_to: str | None = None  # a cluster the next sample is taken on
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lag-sampler", daemon=True)
        self.latest: list[dict[str, Any]] = []

    def start(self) -> LagSampler:
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        """Stop sampling after one last sample; return that sample."""
        self._stop.set()
        self._thread.join()
        self._sample()
        self._reader.close()
        return self.latest

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def move_to(self, bootstrap_servers: str) -> None:
        """Sample the same group and topics on another cluster from the next sample on (a
        service failed over to a mirror that keeps the topics' names)."""
        self._moved_to = bootstrap_servers

    def _sample(self) -> None:
        if (moved := self._moved_to) is not None:  # in the sampling thread: one reader in use
            self._moved_to = None
            self._reader.close()
            self._reader = group_reader(moved, self.group)
        try:
            self.latest = sample_lag(self._reader, self.group, self.topic)
        except Exception as exc:  # a sample may fail while a broker restarts; keep going
            log.warning("lag sample failed: %s", exc)
            return
        for row in self.latest:
            self._sink(row)


def commits_from_samples(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The committed-offset timeline as ``offsets`` events, read from lag samples.

    For a broker without a ``__consumer_offsets`` topic (Tansu) the group's committed offsets
    are only seen by asking for them: each change between two samples becomes a ``commit``
    event (a ``tombstone`` when the offset disappeared), stamped with the sample's time. A
    commit undone before the next sample is not seen; one that moved an offset back is.
    """
    events: list[dict[str, Any]] = []
    last: dict[tuple[str, int], int | None] = {}
    for sample in samples:
        key = (sample["topic"], sample["partition"])
        offset = sample["committed"]
        if last.get(key) == offset:
            continue
        if offset is None and key not in last:
            continue
        last[key] = offset
        ts_ms = int(sample["ts"] * 1000)
        events.append(
            {
                "kind": "commit" if offset is not None else "tombstone",
                "group": sample["group"],
                "topic": sample["topic"],
                "partition": sample["partition"],
                "offset": offset,
                "leader_epoch": None,
                "metadata": None,
                "commit_ts_ms": ts_ms,
                "expire_ts_ms": None,
                "log_partition": -1,
                "log_offset": len(events),
                "log_ts_ms": ts_ms,
                "sampled": True,
            }
        )
    return events
