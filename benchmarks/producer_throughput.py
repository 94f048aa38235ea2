"""The workload producer against Kafka's own ``kafka-producer-perf-test``, on the same broker.

For 1KB and ~800KB records, each producer sends to a fresh one-partition topic with
``acks=all`` and ``linger.ms=5``; runs alternate between the producers so drift on a shared
machine hits all of them. Reported: records/s and MB/s (10^6 bytes of value), median of
``--runs``, and the ratio of the medians. The workload producer's time includes generating
each record (Faker documents, JSON, identity), as it does in an incident; the perf test sends
random bytes it made up front. The workload producer runs twice per round: bare (nobody
listens to its acks; this gives the ratio) and writing every ack to a run history's
``produce`` stream, as an incident does. Each client keeps its own batching defaults
(librdkafka batches up to 1MB, Java's ``batch.size`` is 16KB), as when nobody tunes them.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from kafka_replay.cluster import EmbeddedCluster, choose_version
from kafka_replay.cluster.artifacts import LOG4J_VERSION
from kafka_replay.history import RunHistory
from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.maven import Artifact, resolve_classpath
from kafka_replay.workload import WorkloadProducer, deal_flood, quiet_events

CASES = {  # name: (record bytes, records per run)
    "1KB": (1_000, 50_000),
    "800KB": (800_000, 250),
}
#: kafka-tools is not on Maven Central for every release (4.4.0 has none); the perf test is a
#: client, so the newest one published serves any broker version.
PERF_TEST_VERSION = "4.3.1"
_RESULT = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def perf_test_classpath(version: str) -> list[str]:
    tools = Artifact("org.apache.kafka", "kafka-tools", version,
                     exclude=("org.apache.kafka:kafka-tools-api",))  # fmt: skip
    binding = Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION)
    return [str(jar) for jar in resolve_classpath(f"kafka-tools-{version}", [tools, binding])]


def run_perf_test(classpath: list[str], bootstrap: str, topic: str, size: int, count: int) -> float:
    """Records/s as Kafka's ProducerPerformance reports it."""
    command = [
        find_java(), "-Xmx1g", "-cp", ":".join(classpath),
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic", topic, "--num-records", str(count), "--record-size", str(size),
        "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
        "acks=all", "linger.ms=5", "max.request.size=2000000",
    ]  # fmt: skip
    output = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    matches = _RESULT.findall(output.stdout)
    if not matches or int(matches[-1][0]) != count:
        raise RuntimeError(f"unexpected perf-test output:\n{output.stdout}\n{output.stderr}")
    return float(matches[-1][1])


def run_workload_producer(
    bootstrap: str, topic: str, size: int, count: int, record_acks: bool = False
) -> float:
    """Records/s of the workload producer; with ``record_acks``, acks go to a run history."""
    if size >= 100_000:
        workload = deal_flood(deals=1, runs=1, run_length=(count, count), target_bytes=size)
    else:
        workload = quiet_events(count=count, keys=50, size_bytes=size, rate=None)
    with tempfile.TemporaryDirectory(prefix="bench-history-") as directory:
        history = RunHistory(Path(directory)) if record_acks else None
        on_event = history.stream("produce") if history else None
        try:
            stats = WorkloadProducer(bootstrap, topic, on_event, config={"linger.ms": 5}).run(
                workload
            )
        finally:
            if on_event is not None:
                on_event.close()
    if stats.acked != count:
        raise RuntimeError(f"only {stats.acked} of {count} records acknowledged")
    return stats.records_per_s


Producer = Callable[[str, str, int, int], float]


def run(args: argparse.Namespace) -> None:
    version = choose_version(args.kafka_version)
    producers: dict[str, Producer] = {
        "workload": run_workload_producer,
        "workload+history": functools.partial(run_workload_producer, record_acks=True),
        "perf-test": functools.partial(run_perf_test, perf_test_classpath(PERF_TEST_VERSION)),
    }
    overrides = {"message.max.bytes": 2_000_000}
    with EmbeddedCluster(version, broker_config=overrides) as cluster:
        print(
            f"\nProducer throughput, one embedded Kafka {version} broker, {args.runs} runs each"
            f" (perf test from kafka-tools {PERF_TEST_VERSION})"
        )
        for name, (size, count) in CASES.items():
            results: dict[str, list[float]] = {label: [] for label in producers}
            for _ in range(args.runs):
                for label, produce in producers.items():
                    topic = cluster.create_topic(f"bench-{name}")
                    results[label].append(produce(cluster.bootstrap_servers, topic, size, count))
                    cluster.delete_topics([topic])
            _report(name, size, results)


def _report(name: str, size: int, results: dict[str, list[float]]) -> None:
    medians = {label: statistics.median(rates) for label, rates in results.items()}
    kafkas = medians["perf-test"]
    print(f"  {name} records ({size} bytes)")
    for label, title in (("workload", "workload producer (confluent-kafka)"),
                         ("workload+history", "  the same, recording every ack"),
                         ("perf-test", "kafka-producer-perf-test (Java)")):  # fmt: skip
        rate = medians[label]
        print(f"    {title:<37} {rate:10.0f} rec/s {rate * size / 1e6:8.1f} MB/s")
    for label, title in (("workload", "ratio workload / perf-test"),
                         ("workload+history", "ratio recording acks / perf-test")):  # fmt: skip
        print(f"    {title:<37} {medians[label] / kafkas:10.2f}")
