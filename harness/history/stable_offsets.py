"""Where read_committed readers stop: each output partition's last stable offset (LSO).

An open transaction holds a partition's LSO at its first record: a read_committed reader sees
nothing past it, however many later transactions commit, until it commits or its coordinator
aborts it (``transaction.timeout.ms``). Sampled during a run, the LSO beside the high watermark
shows such a stall from outside the app; after the steps, the run waits until every LSO reaches
its high watermark before the checker reads, so records behind a transaction that is still
open are never counted as lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_replay.waiting import poll

log = logging.getLogger(__name__)

#: What a producer waits before its coordinator aborts an open transaction, unless it says
#: otherwise (``transaction.timeout.ms``: 60 s in librdkafka and the Java client).
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
#: How often a coordinator looks for timed-out transactions (its broker setting's default).
DEFAULT_ABORT_INTERVAL_MS = 10_000
ABORT_INTERVAL_KEY = "transaction.abort.timed.out.transaction.cleanup.interval.ms"


def stable_ends(admin: AdminClient, topic: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Per partition of ``topic``: its ``lso`` (the end a read_committed reader reaches) and its
    ``hw`` (the high watermark, a read_uncommitted reader's end), from ListOffsets."""
    partitions = sorted(admin.list_topics(topic, timeout=timeout).topics[topic].partitions)
    specs = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
    ends = {
        level: admin.list_offsets(specs, isolation_level=level, request_timeout=timeout)
        for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED)
    }
    return [
        {
            "topic": topic,
            "partition": tp.partition,
            "lso": ends[IsolationLevel.READ_COMMITTED][tp].result().offset,
            "hw": ends[IsolationLevel.READ_UNCOMMITTED][tp].result().offset,
        }
        for tp in specs
    ]


def held(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The partitions whose LSO is behind their high watermark: an open transaction holds them."""
    return [{**row, "held": row["hw"] - row["lso"]} for row in rows if row["lso"] < row["hw"]]


def held_partitions(bootstrap_servers: str, topic: str) -> dict[int, int]:
    """Each partition of ``topic`` an open transaction holds now, with its last stable offset
    (empty where the broker cannot say)."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 0})
    try:
        return {row["partition"]: row["lso"] for row in held(stable_ends(admin, topic))}
    except Exception as exc:  # a broker without isolation-aware ListOffsets
        log.warning("last stable offsets of %s could not be read: %s", topic, exc)
        return {}


def settle_timeout_s(client: dict[str, Any], broker: dict[str, Any]) -> float:
    """The longest an open transaction can last: the app's transaction timeout, then the
    coordinator's next look for timed-out transactions, and a margin for a loaded machine."""
    timeout = int(client.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS))
    interval = int(broker.get(ABORT_INTERVAL_KEY, DEFAULT_ABORT_INTERVAL_MS))
    return (timeout + interval) / 1000 + 5.0


def settle(
    admin: AdminClient, topics: Iterable[str], timeout_s: float, poll_s: float = 0.25
) -> tuple[float, list[dict[str, Any]]]:
    """Wait until no open transaction holds a partition of ``topics`` (at most ``timeout_s``).

    Returns the seconds waited and the partitions still held at the deadline (empty when all
    settled). A broker that cannot answer ListOffsets by isolation leaves nothing to wait for.
    """
    started = time.monotonic()
    pinned: list[dict[str, Any]] = []

    def settled() -> bool:
        nonlocal pinned
        try:
            pinned = [row for topic in topics for row in held(stable_ends(admin, topic))]
        except Exception as exc:  # a broker without isolation-aware ListOffsets
            log.warning("last stable offsets could not be read: %s", exc)
            pinned = []
        return not pinned

    poll(settled, timeout_s, every_s=poll_s)
    return round(time.monotonic() - started, 2), pinned


class StableOffsetSampler:
    """Samples the LSO and high watermark of ``topics`` every ``interval`` seconds until
    stopped, each partition's row to ``sink``."""

    def __init__(
        self,
        admin: AdminClient,
        topics: Iterable[str],
        sink: Callable[[dict[str, Any]], None],
        interval: float = 0.5,
    ) -> None:
        self.admin, self.topics, self.interval = admin, list(topics), interval
        self._sink = sink
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lso-sampler", daemon=True)

    def start(self) -> StableOffsetSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling after one last sample."""
        self._stop.set()
        self._thread.join()
        self._sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        for topic in self.topics:
            try:
                rows = stable_ends(self.admin, topic)
            except Exception as exc:  # a sample may fail while a broker restarts; keep going
                log.warning("last stable offset sample of %s failed: %s", topic, exc)
                continue
            for row in rows:
                self._sink(row)


def lso_stalls(samples: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each time a partition's LSO stood still while its high watermark grew past it: the
    partition, when the stall began and ended (sample times), and how many records it held
    at most. A stall still under way at the last sample ends there."""
    stalls: list[dict[str, Any]] = []
    open_: dict[tuple[str, int], dict[str, Any]] = {}
    for row in sorted(samples, key=lambda r: r["ts"]):
        key = (row["topic"], row["partition"])
        stall = open_.get(key)
        if stall is not None and row["lso"] == stall["lso"]:
            stall["end"], stall["hw_end"] = row["ts"], row["hw"]
            stall["held"] = max(stall["held"], row["hw"] - row["lso"])
            continue
        if stall is not None:
            stalls.append(open_.pop(key))
        if row["lso"] < row["hw"]:
            open_[key] = {
                "topic": row["topic"],
                "partition": row["partition"],
                "lso": row["lso"],
                "start": row["ts"],
                "end": row["ts"],
                "hw_start": row["hw"],
                "hw_end": row["hw"],
                "held": row["hw"] - row["lso"],
            }
    stalls.extend(open_.values())
    grew = [s for s in stalls if s["hw_end"] > s["hw_start"]]
    for stall in grew:
        stall["seconds"] = round(stall["end"] - stall["start"], 2)
    return sorted(grew, key=lambda s: s["start"])
