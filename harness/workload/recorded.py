"""Recorded traffic as a workload: a capture's records sent again with their own timing.

Each captured record becomes a :class:`~kafka_replay.workload.records.WorkloadRecord` due at
its offset from the capture's first record (divided by ``speed``), to its own partition, with
its key, value and headers; :class:`~kafka_replay.workload.producer.WorkloadProducer` keeps
that schedule from its start, so the bursts and gaps of the original come back as they were.
Identity is the harness's own: a fresh ``event_id`` header and a per-key ``seq``, so the
checker can follow every replayed record (a captured ``event_id`` header is dropped).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faker import Faker

from .capture_file import CapturedRecord, CaptureError, check_header, parse_record, read_lines
from .records import EVENT_ID_HEADER, Stamper, Step, Workload, WorkloadRecord

__all__ = ["Capture", "CaptureError", "read_capture", "recorded_workload"]


@dataclass(frozen=True)
class Capture:
    """A capture file read whole: its header and its records in time order."""

    path: Path
    header: dict[str, Any]
    records: list[CapturedRecord] = field(repr=False)

    @property
    def topic(self) -> str:
        return str(self.header["topic"])

    @property
    def partitions(self) -> int:
        return int(self.header["partitions"])


def read_capture(path: Path) -> Capture:
    """The capture at ``path``; :class:`CaptureError` naming the file and line if it is none."""
    header, records = _header(path), list(iter_records(path))
    return Capture(path, header, records)


def _header(path: Path) -> dict[str, Any]:
    lines = read_lines(path)
    try:
        _, line = next(lines)  # an empty file raises CaptureError here
    finally:
        lines.close()
    return check_header(path, line)


def iter_records(path: Path) -> Iterator[CapturedRecord]:
    """The records of the capture at ``path``, one line at a time, checked as they come: a
    bad line, or fewer or more records than the header says, is a :class:`CaptureError`."""
    expected, number = -1, 1
    for number, line in read_lines(path):
        if number == 1:
            expected = check_header(path, line)["records"]
            continue
        try:
            yield parse_record(line)
        except ValueError as exc:
            raise CaptureError(f"{path}, line {number}: not a captured record: {exc}") from None
    if number - 1 != expected:
        raise CaptureError(
            f"{path}, line {number}: the file ends after {number - 1} records, its header "
            f"says {expected} (was it cut short?)"
        )


def recorded_workload(path: Path, speed: float = 1.0, seed: int = 0) -> Workload:
    """The capture at ``path`` as a workload, ``speed`` times as fast as it was recorded.

    A record without a key is sent with the key ``""``, and one without a value (a
    tombstone) with an empty value: a workload record always has both, and its key is text (a
    key that is not UTF-8 is sent with U+FFFD for its undecodable bytes). A null header value
    is sent empty. The topic it is sent to needs the capture's partitions (or more).
    ``seed`` seeds the fresh event ids.
    """
    if not (isinstance(speed, int | float) and math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be a number above 0, got {speed!r}")
    header = _header(path)

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        seqs: dict[str, int] = {}
        first_ms: int | None = None
        for record in iter_records(path):
            if first_ms is None:
                first_ms = record.ts_ms
            key = "" if record.key is None else record.key.decode(errors="replace")
            seq = seqs.get(key, 0)
            seqs[key] = seq + 1
            headers = tuple(
                (name, value or b"") for name, value in record.headers if name != EVENT_ID_HEADER
            )
            yield WorkloadRecord(
                key,
                stamper.event_id(),
                seq,
                record.value or b"",
                headers,
                record.partition,
                (record.ts_ms - first_ms) / 1000 / speed,
            )

    parameters = {
        "recorded": str(path),
        "speed": speed,
        "records": header["records"],
        "partitions": header["partitions"],
    }
    return Workload("recorded", seed, build, rate=None, parameters=parameters)
