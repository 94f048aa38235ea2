"""Broker start: time to the first acknowledged produce, and peak RSS, for each backend.

Artifacts and images are made first, so cold resolution is excluded (``--cold-image`` times
an image build from nothing instead of reusing one). Each run starts a fresh single-node
cluster, produces one record with ``acks=all`` and waits for its ack; the broker JVM's peak
resident memory (``VmHWM``) is read just before it stops. Embedded and container runs
alternate, so drift on a shared machine affects both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from confluent_kafka import Producer

from harness.cluster import BrokerNode, choose_version
from harness.cluster.artifacts import kafka_classpath
from harness.cluster.backends import make_cluster
from harness.cluster.images import (
    DEBIAN_IMAGE,
    JAVA_IMAGE,
    DockerUnavailable,
    build_kafka_image,
    docker_client,
    image_exists,
    local_image,
)
from harness.cluster.nodes import NodeCluster


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc status (Linux only)")


def broker_pid(cluster: NodeCluster) -> int:
    node = cluster.nodes[0]
    if isinstance(node, BrokerNode):
        assert node.process is not None
        return node.process.pid
    return node.container.get_wrapped_container().attrs["State"]["Pid"]  # type: ignore[attr-defined]


def one_run(backend: str, version: str) -> tuple[float, float, float]:
    """Seconds to ready, seconds to first ack, peak RSS in MiB."""
    started = time.perf_counter()
    cluster = make_cluster(backend, version).start()
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
        peak = peak_rss_mib(broker_pid(cluster))
    finally:
        cluster.stop()
    return ready, first_ack, peak


def run(args: argparse.Namespace) -> None:
    version = choose_version(args.kafka_version)
    kafka_classpath(version)  # warm the cache: cold resolution is not what is measured
    backends = ["embedded"]
    try:
        _prepare_image(version, cold=args.cold_image)
        backends.append("container")
    except DockerUnavailable as exc:
        print(f"(container backend skipped: {exc})")
    for backend in backends:
        one_run(backend, version)  # warm-up: page cache, image layers
    runs: dict[str, list[tuple[float, float, float]]] = {b: [] for b in backends}
    for _ in range(args.runs):
        for backend in backends:
            runs[backend].append(one_run(backend, version))
    print(f"\nBroker start, Kafka {version}, {args.runs} runs per backend (after a warm-up run)")
    for backend, results in runs.items():
        ready, first_ack, peak = zip(*results, strict=True)
        print(f" {backend}")
        _summary("start -> ready (metadata lists the broker)", ready, "s")
        _summary("start -> first acknowledged produce", first_ack, "s")
        _summary("broker peak RSS (VmHWM)", peak, " MiB")
    if "container" in runs:
        ratio = statistics.median(r[1] for r in runs["container"]) / statistics.median(
            r[1] for r in runs["embedded"]
        )
        print(f"  container / embedded, median time to first ack: {ratio:.2f}")


def _prepare_image(version: str, cold: bool) -> None:
    client = docker_client()
    if cold:
        for tag in (local_image(version), JAVA_IMAGE, DEBIAN_IMAGE):
            if image_exists(client, tag):
                client.images.remove(tag, force=True)
    started = time.perf_counter()
    build_kafka_image(version, progress=lambda line: print(f"  {line}"))
    what = "from nothing" if cold else "(reused where it existed)"
    print(f"Image {local_image(version)} {what}: {time.perf_counter() - started:.1f}s")


def _summary(label: str, values: tuple[float, ...], unit: str) -> None:
    low, high, median = min(values), max(values), statistics.median(values)
    print(f"  {label:<44} median {median:7.2f}{unit}  (min {low:.2f}, max {high:.2f})")
