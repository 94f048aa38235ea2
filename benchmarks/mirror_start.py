"""MirrorMaker 2's start between two clusters: first use, then warm, and the memory of the lot.

Each run starts :class:`~kafka_replay.apps.mirror_maker.MirrorMaker` (the worker a ``[mirror]``
run starts) from one embedded broker holding 1,000 records in 3 partitions to another, and times
it to two points: its connectors running (the worker answered, took both connectors and its
source task runs), and the 1,000th record on the mirror. The peak resident memory (``VmHWM``)
of the worker and of the two brokers is read then: what a run with a mirror adds to the
machine. The first run starts with the worker's cache entry removed (Maven resolves it again
from its local repository; a new machine also downloads it); the others are warm, and their
median is given.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from benchmarks.broker_start import broker_pid, peak_rss_mib
from benchmarks.connect_start import print_warm
from kafka_replay.apps.mirror_maker import MIRROR_VERSION, MirrorMaker
from kafka_replay.cluster import EmbeddedCluster, choose_version
from kafka_replay.servers.paths import cache_root

RECORDS = 1000
PARTITIONS = 3


def run(args: argparse.Namespace) -> None:
    version = choose_version(args.kafka_version)
    work = Path(tempfile.mkdtemp(prefix="kafka-replay-bench-mirror-"))
    try:
        with (
            EmbeddedCluster(version, work_dir=work / "primary") as primary,
            EmbeddedCluster(version, work_dir=work / "mirror") as mirror,
        ):
            shutil.rmtree(cache_root() / "artifacts" / f"mirror-maker-{MIRROR_VERSION}",
                          ignore_errors=True)  # fmt: skip
            runs = [one_run(primary, mirror, work / f"run-{n}") for n in range(args.runs + 1)]
            brokers = [peak_rss_mib(broker_pid(c)) for c in (primary, mirror)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first, warm = runs[0], runs[1:]
    print(f"\nMirrorMaker 2 start (Connect {MIRROR_VERSION}, {RECORDS} records, Kafka {version})")
    print(f"  first use: connectors running {first[0]:.1f} s, {RECORDS} records mirrored "
          f"{first[1]:.1f} s")  # fmt: skip
    print_warm(
        warm,
        ("start -> connectors running", "s"),
        (f"start -> {RECORDS} records mirrored", "s"),
        ("worker peak RSS (VmHWM)", " MiB"),
    )
    print(f"  brokers' peak RSS after the runs: primary {brokers[0]:.0f} MiB, "
          f"mirror {brokers[1]:.0f} MiB")  # fmt: skip


def one_run(
    primary: EmbeddedCluster, mirror: EmbeddedCluster, work: Path
) -> tuple[float, float, float]:
    """Seconds to the connectors running and to every record mirrored, and the worker's peak
    MiB; a topic of its own on both clusters."""
    topic = primary.create_topic("mirror-bench", PARTITIONS)
    mirror.admin().create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    mirror.wait_for_leaders(topic, PARTITIONS, 30)
    producer = Producer(primary.client_config())
    for n in range(RECORDS):
        producer.produce(topic, f"record-{n}".encode(), key=str(n).encode())
    assert producer.flush(30) == 0
    started = time.monotonic()
    maker = MirrorMaker(
        work, primary.bootstrap_servers, mirror.bootstrap_servers, [topic], [f"g-{topic}"]
    )
    try:
        maker.start()
        running = time.monotonic() - started
        reader = Consumer({"bootstrap.servers": mirror.bootstrap_servers, "group.id": "bench"})
        try:
            while _copied(reader, topic) < RECORDS:
                if time.monotonic() - started > 300:
                    raise RuntimeError("the records were not mirrored within 300 s")
                time.sleep(0.05)
        finally:
            reader.close()
        mirrored = time.monotonic() - started
        assert maker.process is not None
        peak = peak_rss_mib(maker.process.pid)
    finally:
        maker.stop()
    return running, mirrored, peak


def _copied(reader: Consumer, topic: str) -> int:
    ends = [reader.get_watermark_offsets(TopicPartition(topic, p), 5) for p in range(PARTITIONS)]
    return sum(high for _, high in ends)
