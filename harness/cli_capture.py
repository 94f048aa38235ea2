"""``kafka-replay capture``: a window of a real topic to a file, anonymized, for replay.

The file replays with its own timing as a workload (``recorded = "FILE"``, see
:func:`kafka_replay.workload.captured.recorded_source`). Times are ISO 8601 (naive means
UTC), epoch milliseconds, ``now``, or a span before now (``-15m``, ``-2h``, ``-30s``). The
anonymizing secret comes from ``$REPLAY_ANONYMIZE_SECRET`` (never from the command line,
where other users could read it), else it is random for this capture.
"""

from __future__ import annotations

import argparse
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.markup import escape

from kafka_replay.console import make_console

console = make_console(stderr=True)

_SPAN = re.compile(r"^-(?P<amount>\d+(?:\.\d+)?)(?P<unit>ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
#: Epoch milliseconds have 12 digits or more since 1973; fewer are taken for seconds by mistake.
_EPOCH_MS_DIGITS = 12
TIME_FORMS = "ISO 8601 (2026-11-25T10:00:00Z), epoch milliseconds, now, or -15m/-2h/-30s"


def parse_time(text: str, now_ms: int) -> int:
    """Epoch milliseconds of a ``--from``/``--to`` value; ValueError naming the forms."""
    text = text.strip()
    if text == "now":
        return now_ms
    span = _SPAN.match(text)
    if span:
        return now_ms - round(float(span["amount"]) * _UNIT_MS[span["unit"]])
    if text.isdigit():
        if len(text) < _EPOCH_MS_DIGITS:
            raise ValueError(
                f"{text} looks like epoch seconds; give epoch milliseconds ({text}000) or "
                "an ISO 8601 time"
            )
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a time: give {TIME_FORMS}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return round(when.timestamp() * 1000)


def add_capture_command(commands: Any) -> None:
    capture = commands.add_parser(
        "capture",
        help="write a time window of a topic to a file, anonymized, to replay with its timing",
    )
    capture.add_argument(
        "--kafka-bootstrap", required=True, metavar="HOST:PORT", help="the cluster to read"
    )
    capture.add_argument("--topic", required=True, help="the topic to read (every partition)")
    capture.add_argument("--from", dest="start", required=True, metavar="TIME", help=TIME_FORMS)
    capture.add_argument("--to", dest="end", required=True, metavar="TIME", help=TIME_FORMS)
    capture.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="the capture file to write"
    )
    capture.add_argument(
        "--anonymize",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATH",
        help="JSON paths into the values ($.customer.email, $.items[*].sku) whose values are "
        "replaced by consistent fakes (keyed by $REPLAY_ANONYMIZE_SECRET); repeatable",
    )
    capture.add_argument(
        "--anonymize-key", action="store_true", help="replace the keys too (keeping their shape)"
    )
    capture.add_argument(
        "--spark-above",
        type=int,
        default=100_000,
        metavar="N",
        help="read a window of more than N records with Spark (default 100000)",
    )
    # argparse takes a value that starts with "-" for an option unless it looks like a
    # negative number: let "-15m" look like one, so `--from -15m` reads as the user means
    capture._negative_number_matcher = re.compile(r"^-\d+(\.\d+)?(ms|s|m|h|d)?$")
    capture.set_defaults(run=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    from kafka_replay.workload.capture import capture

    now_ms = time.time_ns() // 1_000_000
    start_ms = _time_option("--from", args.start, now_ms)
    end_ms = _time_option("--to", args.end, now_ms)
    if start_ms >= end_ms:
        raise ValueError(f"--from ({args.start}) must be before --to ({args.end})")
    if args.spark_above < 0:
        raise ValueError(f"--spark-above must be 0 or more, got {args.spark_above}")
    if args.out.is_dir() or not args.out.parent.is_dir():
        problem = "is a directory" if args.out.is_dir() else f"no directory {args.out.parent}"
        raise ValueError(f"--out {args.out}: {problem}; give the file to write")

    def progress(records: int) -> None:
        console.print(f"{records:,} records read…", highlight=False)

    summary = capture(
        args.kafka_bootstrap,
        args.topic,
        start_ms,
        end_ms,
        args.out,
        anonymize=args.anonymize,
        anonymize_key=args.anonymize_key,
        spark_above=args.spark_above,
        progress=progress,
    )
    console.print(
        escape(
            f"captured {summary.records:,} records of {args.topic} ({summary.partitions} "
            f"partitions) to {summary.path} in {summary.seconds:.1f} s (read with "
            f"{summary.read_with})"
        ),
        highlight=False,
        soft_wrap=True,
    )
    print(summary.path)  # on stdout, whole: for scripts
    return 0


def _time_option(option: str, text: str, now_ms: int) -> int:
    try:
        return parse_time(text, now_ms)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None
