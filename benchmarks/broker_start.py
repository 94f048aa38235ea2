"""Broker start: time to the first acknowledged produce, and peak RSS, for each backend.

Artifacts, images, the class-data archive and the formatted storage template are made first,
so one-time work is excluded (``--cold-image`` times an image build from nothing instead of
reusing one). Each run starts a fresh single-node cluster, produces one record with
``acks=all`` and waits for its ack; the broker JVM's peak resident memory (``VmHWM``) is read
just before it stops. Beside the two backends as they start by default, the embedded broker
is started the way it was before each step that made it faster, so each step's gain is
measured in the same rounds: all runs alternate, and drift on a shared machine hits all alike.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer

from kafka_replay.cluster import BrokerNode, EmbeddedCluster, choose_version
from kafka_replay.cluster.artifacts import kafka_classpath
from kafka_replay.cluster.backends import make_cluster
from kafka_replay.cluster.broker_config import NodeAddress, node_properties
from kafka_replay.cluster.images import build_kafka_image, local_image
from kafka_replay.cluster.nodes import NodeCluster
from kafka_replay.cluster.storage_template import template_key
from kafka_replay.servers.docker import (
    DEBIAN_IMAGE,
    JAVA_IMAGE,
    DockerUnavailable,
    docker_client,
    image_exists,
)
from kafka_replay.servers.paths import cache_root


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


#: The embedded broker without each step, newest step last: (label, cluster options, format
#: storage at every start).
TIERED = {"jvm_options": ["-XX:TieredStopAtLevel=4"]}
STEPS = (
    ("embedded, before: a formatter JVM per start", {**TIERED, "class_sharing": False}, True),
    ("  + storage formatted once (a template)", {**TIERED, "class_sharing": False}, False),
    ("  + class-data archive of Kafka's classes", TIERED, False),
    ("  + C1 compiler only (the default)", {}, False),
)


def one_run(backend: str, version: str, options: dict | None = None, reformat: bool = False):
    """Seconds to ready, seconds to first ack, peak RSS in MiB."""
    options = dict(options or {})
    if reformat:  # as before the template: a config never formatted, so formatted at start
        unused = str(15_000 + uuid.uuid4().int % 10_000)
        options["broker_config"] = {"log.cleaner.backoff.ms": unused}
    started = time.perf_counter()
    if backend == "container":
        cluster = make_cluster(backend, version).start()
    else:
        cluster = EmbeddedCluster(version, **options).start()
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
        if reformat:
            template = template_dir(cluster)
            shutil.rmtree(template, ignore_errors=True)
            template.with_name(f"{template.name}.lock").unlink(missing_ok=True)
    return ready, first_ack, peak


def template_dir(cluster: NodeCluster) -> Path:
    """The storage template this cluster's config was formatted into."""
    node = NodeAddress(1, 0, 0)
    properties = node_properties(node, [node], "", cluster.overrides)
    return cache_root() / "storage" / template_key(cluster.version, properties)


def run(args: argparse.Namespace) -> None:
    version = choose_version(args.kafka_version)
    kafka_classpath(version)  # warm the cache: cold resolution is not what is measured
    variants: dict[str, tuple[str, dict | None, bool]] = {
        label: ("embedded", options, reformat) for label, options, reformat in STEPS
    }
    try:
        _prepare_image(version, cold=args.cold_image)
        variants["container (the default)"] = ("container", None, False)
    except DockerUnavailable as exc:
        print(f"(container backend skipped: {exc})")
    for backend, options, reformat in variants.values():
        one_run(backend, version, options, reformat)  # warm-up: archive, template, page cache
    runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label in variants}
    for _ in range(args.runs):
        for label, (backend, options, reformat) in variants.items():
            runs[label].append(one_run(backend, version, options, reformat))
    print(f"\nBroker start, Kafka {version}, {args.runs} runs each (after a warm-up run)")
    medians = {}
    for label, results in runs.items():
        ready, first_ack, peak = zip(*results, strict=True)
        medians[label] = statistics.median(first_ack)
        print(f" {label}")
        _summary("start -> ready (metadata lists the broker)", ready, "s")
        _summary("start -> first acknowledged produce", first_ack, "s")
        _summary("broker peak RSS (VmHWM)", peak, " MiB")
    before, default = medians[STEPS[0][0]], medians[STEPS[-1][0]]
    print(f"  embedded default / before, median time to first ack: {default / before:.2f}")
    if "container (the default)" in medians:
        ratio = medians["container (the default)"] / default
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
