"""Embedded broker: time from start to the first acknowledged produce, and the broker's peak RSS.

The artifact cache is warmed first, so cold-cache resolution is excluded. Each run starts a
fresh single-node cluster, produces one record with ``acks=all`` and waits for its ack; the
broker's peak resident memory (``VmHWM``) is read just before it stops.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from confluent_kafka import Producer

from harness.cluster import EmbeddedCluster, choose_version
from harness.cluster.artifacts import kafka_classpath


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc status (Linux only)")


def one_run(version: str) -> tuple[float, float, float]:
    """Seconds to ready, seconds to first ack, peak RSS in MiB."""
    started = time.perf_counter()
    cluster = EmbeddedCluster(version).start()
    try:
        ready = time.perf_counter() - started
        topic = cluster.create_topic("bench")
        producer = Producer(cluster.client_config(acks="all"))
        acked: list[bool] = []
        producer.produce(topic, b"first", on_delivery=lambda err, msg: acked.append(err is None))
        producer.flush(60)
        if acked != [True]:
            raise RuntimeError("the first record was not acknowledged")
        first_ack = time.perf_counter() - started
        assert cluster.nodes[0].process is not None
        peak = peak_rss_mib(cluster.nodes[0].process.pid)
    finally:
        cluster.stop()
    return ready, first_ack, peak


def run(args: argparse.Namespace) -> None:
    version = choose_version(args.kafka_version)
    kafka_classpath(version)  # warm the cache: cold resolution is not what is measured
    one_run(version)  # warm the OS page cache and the JIT-independent file reads
    runs = [one_run(version) for _ in range(args.runs)]
    ready, first_ack, peak = zip(*runs, strict=True)
    print(f"\nEmbedded broker, Kafka {version}, {args.runs} runs (after one warm-up run)")
    _summary("start -> ready (metadata lists the broker)", ready, "s")
    _summary("start -> first acknowledged produce", first_ack, "s")
    _summary("broker peak RSS (VmHWM)", peak, " MiB")


def _summary(label: str, values: tuple[float, ...], unit: str) -> None:
    low, high, median = min(values), max(values), statistics.median(values)
    print(f"  {label:<44} median {median:7.2f}{unit}  (min {low:.2f}, max {high:.2f})")
