"""The Kafka protocol's framing, as far as a proxy needs it to aim a fault at one request.

Every request and response is a 4-byte big-endian size and that many bytes. A request starts
with its API key, API version and correlation id, then the client id (a nullable int16-length
string in every header version); a response starts with the correlation id of its request.
That is all a fault needs to choose a request and find its answer, so nothing past the client
id is decoded here; an API's name comes from the protocol's generated schemas (``kio``).
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from functools import cache

from kio.schema.index import api_key_map

#: Requests larger than this are not Kafka's (a client's default limit is 100 MB).
MAX_FRAME_BYTES = 1 << 30

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhih")


class FrameError(ValueError):
    """Bytes that are not a Kafka frame."""


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def api(self) -> str:
        return api_name(self.api_key)


@cache
def api_keys() -> dict[str, int]:
    """Every API the protocol defines, by its name as Kafka's docs write it (``Produce``)."""
    return {
        "".join(part.title() for part in name.split("_")): key for key, name in api_key_map.items()
    }


def api_name(api_key: int) -> str:
    """An API key's name (``Produce`` for 0), or ``api-N`` for a key the schemas do not know."""
    names = {key: name for name, key in api_keys().items()}
    return names.get(api_key, f"api-{api_key}")


def parse_request_header(frame: bytes) -> RequestHeader:
    """The header of a request frame (the bytes after its size)."""
    if len(frame) < _HEADER.size:
        raise FrameError(f"a request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id, length = _HEADER.unpack_from(frame)
    start = _HEADER.size
    if length < 0:
        return RequestHeader(api_key, api_version, correlation_id, None)
    if start + length > len(frame):
        raise FrameError("the request's client id runs past its end")
    client_id = frame[start : start + length].decode("utf-8", "replace")
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """A request's header in the form every header version starts with (a body-less request of
    a version whose header has nothing more: ApiVersions v0)."""
    if client_id is None:
        return _HEADER.pack(api_key, api_version, correlation_id, -1)
    raw = client_id.encode()
    return _HEADER.pack(api_key, api_version, correlation_id, len(raw)) + raw


def response_correlation_id(frame: bytes) -> int:
    """The correlation id a response frame answers."""
    if len(frame) < 4:
        raise FrameError(f"a response of {len(frame)} bytes has no correlation id")
    return int(_SIZE.unpack_from(frame)[0])


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's bytes after its size, or None when the peer closed between frames."""
    try:
        size = _SIZE.unpack(await reader.readexactly(_SIZE.size))[0]
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("the connection closed inside a frame's size") from exc
        return None
    if not 0 <= size <= MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {size} bytes is not Kafka's")
    return await reader.readexactly(size)


def frame(payload: bytes) -> bytes:
    """``payload`` with its size in front."""
    return _SIZE.pack(len(payload)) + payload
