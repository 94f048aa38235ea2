"""One request to one broker, in the protocol itself, encoded and read with its generated types
(``kio``): for what clients do not ask (a log's end on a replica, the cluster's feature levels).
"""

from __future__ import annotations

import io
import itertools
import socket
import struct
from typing import Any, TypeVar

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from .kafka_wire import frame

Response = TypeVar("Response")
_SIZE = struct.Struct(">i")
_correlation = itertools.count(1)


class AskError(RuntimeError):
    """The broker did not answer, or answered something else."""


def ask(
    host: str,
    port: int,
    request: Any,
    response_type: type[Response],
    client_id: str = "kafka-replay",
    timeout: float = 10.0,
) -> Response:
    """Send ``request`` to the broker at ``host:port`` on a connection of its own and read
    its answer as ``response_type`` (the request's own version of the response)."""
    correlation_id = next(_correlation)
    out = io.BytesIO()
    header_type = request.__header_schema__
    header = header_type(
        request_api_key=request.__api_key__,
        request_api_version=request.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    entity_writer(header_type)(out, header)
    entity_writer(type(request))(out, request)
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.sendall(frame(out.getvalue()))
            answer = _read_frame(connection)
    except OSError as exc:
        raise AskError(f"the broker at {host}:{port} did not answer: {exc}") from exc
    answer_header, offset = entity_reader(response_type.__header_schema__)(answer, 0)  # type: ignore[attr-defined]
    if answer_header.correlation_id != correlation_id:
        raise AskError(f"the broker at {host}:{port} answered another request")
    response, _ = entity_reader(response_type)(answer, offset)
    return response


def _read_frame(connection: socket.socket) -> bytes:
    size = _SIZE.unpack(_read_exactly(connection, _SIZE.size))[0]
    return _read_exactly(connection, size)


def _read_exactly(connection: socket.socket, count: int) -> bytes:
    chunks, left = [], count
    while left:
        chunk = connection.recv(left)
        if not chunk:
            raise AskError("the broker closed the connection inside its answer")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
