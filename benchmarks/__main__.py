"""Run benchmarks: ``python -m benchmarks [NAME ...] [--runs N] [--kafka-version V]``.

``stability`` takes incident names after it: ``python -m benchmarks stability --times 5 NAME``;
``checker-warm`` takes runs: ``python -m benchmarks checker-warm zombie-commit:vulnerable``;
``matrix`` takes groups of the matrix tier: ``python -m benchmarks matrix any-app tansu``.
"""

from __future__ import annotations

import argparse
import logging
import sys

from benchmarks import (
    broker_start,
    checker_recorded,
    checker_scale,
    checker_sink,
    checker_small,
    checker_warm,
    collection,
    compare_matrix,
    connect_start,
    explore,
    explore_hypothesis,
    flink_start,
    installers,
    lanes,
    leaks,
    matrix,
    mirror_start,
    producer_findings,
    producer_throughput,
    scale,
    shards,
    stability,
)

BENCHMARKS = {
    "broker-start": broker_start.run,
    "producer-throughput": producer_throughput.run,
    "checker-scale": checker_scale.run,
    "checker-small": checker_small.run,
    "checker-warm": checker_warm.run,
    "checker-recorded": checker_recorded.run,
    "checker-sink": checker_sink.run,
    "collection": collection.run,
    "stability": stability.run,
    "leaks": leaks.run,
    "compare-matrix": compare_matrix.run,
    "connect-start": connect_start.run,
    "flink-start": flink_start.run,
    "flink-session-start": flink_start.run_session,
    "mirror-start": mirror_start.run,
    "scale": scale.run,
    "lanes": lanes.run,
    "producer-findings": producer_findings.run,
    "installers": installers.run,
    "matrix": matrix.run,
    "shards": shards.run,
    "explore": explore.run,
    "explore-hypothesis": explore_hypothesis.run,
}
# long: only when named
ON_REQUEST = (
    "stability",
    "leaks",
    "compare-matrix",
    "connect-start",
    "flink-start",
    "flink-session-start",
    "mirror-start",
    "scale",
    "lanes",
    "checker-sink",
    "checker-recorded",
    "producer-findings",
    "installers",
    "matrix",
    "shards",
    "explore",
    "explore-hypothesis",
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("names", nargs="*", help=f"of {', '.join(BENCHMARKS)} (default: all)")
    parser.add_argument("--runs", type=int, default=5, help="repetitions; the median is reported")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument(
        "--sizes", default=None, help="checker-scale, checker-sink: input counts, e.g. 100000"
    )
    parser.add_argument(
        "--cold-image",
        action="store_true",
        help="broker-start: delete and rebuild the container images to time a build from nothing",
    )
    parser.add_argument(
        "--times",
        type=int,
        default=5,
        help="stability: rounds of the catalog; leaks: trials; checker-warm: rounds of both ways",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=3,
        help="stability, compare-matrix, lanes, matrix, shards, explore: runs side by side",
    )
    parser.add_argument(
        "--shards", type=int, default=3, help="shards: how many parts the catalog is split into"
    )
    parser.add_argument(
        "--budget-s", type=float, default=900.0, help="explore: each service's budget in seconds"
    )
    parser.add_argument(
        "--families", default=None, help="explore: fault families to draw from (default: explore's)"
    )
    parser.add_argument(
        "--search",
        default="aimed,random",
        help="explore: the searches each service is explored with, comma separated (default: "
        "aimed,random, one after the other on the same seed)",
    )
    args = parser.parse_intermixed_args(argv)  # stability's incidents may follow its options
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    for noisy in ("kafka_replay.librdkafka", "kafka_replay.workload"):  # routine client retries
        logging.getLogger(noisy).setLevel(logging.ERROR)
    names, args.incidents = list(args.names), []
    taking_runs = (
        "stability",
        "checker-warm",
        "producer-findings",
        "matrix",
        "explore",
        "explore-hypothesis",
    )
    for taking in taking_runs:  # the names after it are its runs
        if taking in names:
            cut = names.index(taking) + 1
            names, args.incidents = names[:cut], names[cut:]
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}")
    for name in names or [b for b in BENCHMARKS if b not in ON_REQUEST]:
        BENCHMARKS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
