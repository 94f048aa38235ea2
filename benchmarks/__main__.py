"""Run benchmarks: ``python -m benchmarks [NAME ...] [--runs N] [--kafka-version V]``."""

from __future__ import annotations

import argparse
import sys

from benchmarks import broker_start

BENCHMARKS = {"broker-start": broker_start.run}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("names", nargs="*", choices=[*BENCHMARKS, []], help="default: all")
    parser.add_argument("--runs", type=int, default=5, help="repetitions; the median is reported")
    parser.add_argument("--kafka-version", default=None)
    args = parser.parse_args(argv)
    for name in args.names or BENCHMARKS:
        BENCHMARKS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
