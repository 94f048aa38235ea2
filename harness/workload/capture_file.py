"""The capture file: JSON Lines, a header and then one record a line in time order.

The header comes first::

    {"kafka_replay_capture": 1, "topic": "payments", "partitions": 3, "from_ms": ...,
     "to_ms": ..., "records": 400, "anonymized": ["$.iban"], "key_anonymized": true,
     "secret": "given"}

then a line per record, ordered by (timestamp, partition, offset)::

    {"partition": 0, "offset": 17, "ts_ms": 1764064800123, "key": "C-1", "value": "{...}",
     "headers": [["trace", "ab12"], ["blob", {"base64": "/wA="}]]}

Keys, values and header values are text where they are valid UTF-8, else ``{"base64": ...}``;
null stays null. The file is written beside its final name and renamed when complete, so an
interrupted capture leaves no half file.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

VERSION = 1
MARK = "kafka_replay_capture"
Header = tuple[str, bytes | None]


class CaptureError(ValueError):
    """A capture that cannot be made or read; the message says which and why."""


@dataclass(frozen=True, slots=True)
class CapturedRecord:
    partition: int
    offset: int
    ts_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()

    @property
    def order(self) -> tuple[int, int, int]:
        return (self.ts_ms, self.partition, self.offset)


def encode_bytes(raw: bytes | None) -> str | dict[str, str] | None:
    """Text when ``raw`` is UTF-8 (a file one can read and grep), else base64."""
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode()}


def decode_bytes(field: Any) -> bytes | None:
    """The bytes :func:`encode_bytes` wrote; ValueError for anything else."""
    if field is None:
        return None
    if isinstance(field, str):
        return field.encode()
    if isinstance(field, dict) and set(field) == {"base64"} and isinstance(field["base64"], str):
        try:
            return base64.b64decode(field["base64"], validate=True)
        except binascii.Error as exc:
            raise ValueError(f"bad base64: {exc}") from None
    raise ValueError(f"{field!r} is neither text, {{'base64': ...}} nor null")


def record_line(record: CapturedRecord) -> str:
    line = {
        "partition": record.partition,
        "offset": record.offset,
        "ts_ms": record.ts_ms,
        "key": encode_bytes(record.key),
        "value": encode_bytes(record.value),
        "headers": [[name, encode_bytes(value)] for name, value in record.headers],
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"


def parse_record(line: dict[str, Any]) -> CapturedRecord:
    """A record line read back; ValueError naming what is wrong with it."""
    numbers = {name: line.get(name) for name in ("partition", "offset", "ts_ms")}
    for name, number in numbers.items():
        if not isinstance(number, int) or isinstance(number, bool):
            raise ValueError(f"{name} must be an integer, got {number!r}")
    headers = line.get("headers")
    if not isinstance(headers, list) or not all(
        isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) for h in headers
    ):
        raise ValueError("headers must be a list of [name, value] pairs")
    if "key" not in line or "value" not in line:
        raise ValueError("a record needs key and value (null if it had none)")
    return CapturedRecord(
        numbers["partition"],  # type: ignore[arg-type]
        numbers["offset"],  # type: ignore[arg-type]
        numbers["ts_ms"],  # type: ignore[arg-type]
        decode_bytes(line["key"]),
        decode_bytes(line["value"]),
        tuple((name, decode_bytes(value)) for name, value in headers),
    )


def read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, JSON object)`` for each line of ``path``; :class:`CaptureError` naming
    the file and line for one that is not a JSON object."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise CaptureError(f"cannot read the capture {path}: {exc.strerror}") from None
    with handle:
        number = 0
        for number, raw in enumerate(handle, 1):
            try:
                line = json.loads(raw)
            except ValueError as exc:
                raise CaptureError(f"{path}, line {number}: not JSON ({exc})") from None
            if not isinstance(line, dict):
                raise CaptureError(f"{path}, line {number}: not a JSON object")
            yield number, line
        if number == 0:
            raise CaptureError(f"{path}, line 1: empty, so no kafka-replay capture header")


def check_header(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    """``header`` if it is a capture header this harness reads, else :class:`CaptureError`."""
    version = header.get(MARK)
    if version is None:
        raise CaptureError(
            f"{path}, line 1: not a kafka-replay capture (no {MARK!r} header; make one with "
            "`kafka-replay capture`)"
        )
    if version != VERSION:
        raise CaptureError(
            f"{path}, line 1: capture format {version!r}; this kafka-replay reads {VERSION}"
        )
    for name, kind in (("topic", str), ("partitions", int), ("records", int)):
        if not isinstance(header.get(name), kind):
            raise CaptureError(f"{path}, line 1: the header's {name!r} is missing or wrong")
    return header


class CaptureWriter:
    """Records written to a temporary file beside ``out``; :meth:`finish` puts the header
    before them and renames the whole to ``out``. Left unfinished, nothing remains."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.count = 0
        token = secrets.token_hex(4)
        self._body_path = out.with_name(f".{out.name}.{token}.body")
        self._final_path = out.with_name(f".{out.name}.{token}.tmp")
        self._body: IO[str] = self._body_path.open("w", encoding="utf-8")

    def write(self, record: CapturedRecord) -> None:
        self._body.write(record_line(record))
        self.count += 1

    def finish(self, header: dict[str, Any]) -> Path:
        """Header, then the records, as ``out``; the header's ``records`` is the count."""
        self._body.close()
        header = {MARK: VERSION, **header}
        header["records"] = self.count  # in the place the caller gave it, if it gave one
        with self._final_path.open("w", encoding="utf-8") as final:
            final.write(json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n")
            with self._body_path.open(encoding="utf-8") as body:
                shutil.copyfileobj(body, final)
            final.flush()
            os.fsync(final.fileno())
        os.replace(self._final_path, self.out)
        self._body_path.unlink()
        return self.out

    def discard(self) -> None:
        """Remove whatever was written (nothing of an unfinished capture stays)."""
        self._body.close()
        for path in (self._body_path, self._final_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
