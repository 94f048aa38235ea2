"""Recorded traffic as a workload: a capture's records sent again with their own timing.

Each captured record becomes a :class:`~kafka_replay.workload.records.WorkloadRecord` due at
its offset from the capture's first record (divided by ``speed``), to its own partition, with
its key, value and headers; :class:`~kafka_replay.workload.producer.WorkloadProducer` keeps
that schedule from its start, so the bursts and gaps of the original come back as they were.
Identity is the harness's own: a fresh ``event_id`` header and a per-key ``seq``, so the
checker can follow every replayed record (a captured ``event_id`` header is dropped).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faker import Faker

from .capture_file import CapturedRecord, CaptureError, check_header, parse_record, read_lines
from .payloads import Encoding, Payload, PayloadSource
from .records import Workload

__all__ = ["Capture", "CaptureError", "read_capture", "recorded_source", "recorded_workload"]


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


def recorded_source(
    path: Path, speed: float = 1.0, seed: int = 0, id_field: str | None = None
) -> PayloadSource:
    """The capture at ``path`` as a team's messages, ``speed`` times as fast as recorded.

    Each record keeps its key (none stays none), value (a tombstone is sent empty), headers (a
    null header value is sent empty) and partition; the topic it is sent to needs the
    capture's partitions (or more). With ``id_field``, a JSON object value gets the record's
    ``event_id`` in that field (written back compact); other values are sent as they are.
    ``seed`` seeds the fresh event ids.
    """
    if not (isinstance(speed, int | float) and math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be a number above 0, got {speed!r}")
    header = _header(path)

    def payloads(_rng: random.Random, _fake: Faker) -> Iterator[Payload]:
        first_ms: int | None = None
        for record in iter_records(path):
            if first_ms is None:
                first_ms = record.ts_ms
            headers = tuple((name, value or b"") for name, value in record.headers)
            key = None if record.key is None else record.key.decode(errors="replace")
            at_s = (record.ts_ms - first_ms) / 1000 / speed
            yield Payload(_value(record.value, id_field), key, headers, record.partition, at_s)

    parameters = {
        "recorded": str(path),
        "speed": speed,
        "records": header["records"],
        "partitions": header["partitions"],
    }
    return PayloadSource(path.name, payloads, Encoding(id_field=id_field), seed, None, parameters)


def _value(raw: bytes | None, id_field: str | None) -> Any:
    """The value to send: a document where an id is to be written into it, else the bytes."""
    if raw is None:
        return b""
    if id_field is None:
        return raw
    try:
        document = json.loads(raw)
    except ValueError:
        return raw
    return document if isinstance(document, dict) else raw


def recorded_workload(path: Path, speed: float = 1.0, seed: int = 0) -> Workload:
    """The capture at ``path`` as a workload of its own (see :func:`recorded_source`)."""
    return recorded_source(path, speed, seed).workload()
