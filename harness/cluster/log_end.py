"""A partition's log end offset on its leader: where its own log ends, copied or not.

Clients are told the high watermark (what every in-sync replica holds); the records between it
and the leader's log end are on the leader alone. A broker answers a ListOffsets request for the
latest offset with its log end instead when the request names a replica (``replica_id`` -2,
Kafka's "debugging" replica), so the question is asked in the protocol itself, encoded and read
with its generated types (``kio``), on one connection to that broker.
"""

from __future__ import annotations

import io
import itertools
import socket
import struct

from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.list_offsets.v7.response import ListOffsetsResponse
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i32, i64

from .kafka_wire import frame

#: ``replica_id`` of a request made on a replica's behalf for debugging: answered from the log.
DEBUGGING_REPLICA = -2
#: ListOffsets' "latest" timestamp.
LATEST = -1
_SIZE = struct.Struct(">i")
_correlation = itertools.count(1)


class LogEndError(RuntimeError):
    """The broker did not answer, or answered a partition with an error."""


def log_end_offsets(
    host: str, port: int, topic: str, partitions: list[int], timeout: float = 10.0
) -> dict[int, int]:
    """Per partition of ``topic``, its log end offset on the broker at ``host:port``: on a
    partition's leader, the end of what it appended; on a follower, of what it copied so far.
    An error the broker answers for a partition is raised as :class:`LogEndError`."""
    request = ListOffsetsRequest(
        replica_id=BrokerId(DEBUGGING_REPLICA),
        isolation_level=i8(0),
        topics=(
            ListOffsetsTopic(
                name=TopicName(topic),
                partitions=tuple(
                    ListOffsetsPartition(partition_index=i32(p), timestamp=i64(LATEST))
                    for p in partitions
                ),
            ),
        ),
    )
    correlation_id = next(_correlation)
    out = io.BytesIO()
    header_type = ListOffsetsRequest.__header_schema__
    header = header_type(
        request_api_key=ListOffsetsRequest.__api_key__,
        request_api_version=ListOffsetsRequest.__version__,
        correlation_id=i32(correlation_id),
        client_id="kafka-replay-log-end",
    )
    entity_writer(header_type)(out, header)
    entity_writer(ListOffsetsRequest)(out, request)
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.sendall(frame(out.getvalue()))
            answer = _read_frame(connection)
    except OSError as exc:
        raise LogEndError(f"the broker at {host}:{port} did not answer: {exc}") from exc
    answer_header, offset = entity_reader(ListOffsetsResponse.__header_schema__)(answer, 0)
    if answer_header.correlation_id != correlation_id:
        raise LogEndError(f"the broker at {host}:{port} answered another request")
    response, _ = entity_reader(ListOffsetsResponse)(answer, offset)
    ends = {}
    for answered in response.topics:
        for partition in answered.partitions:
            if partition.error_code:
                raise LogEndError(
                    f"{topic} [{partition.partition_index}] on {host}:{port}: "
                    f"{partition.error_code.name}"
                )
            ends[int(partition.partition_index)] = int(partition.offset)
    return ends


def _read_frame(connection: socket.socket) -> bytes:
    size = _SIZE.unpack(_read_exactly(connection, _SIZE.size))[0]
    return _read_exactly(connection, size)


def _read_exactly(connection: socket.socket, count: int) -> bytes:
    chunks, left = [], count
    while left:
        chunk = connection.recv(left)
        if not chunk:
            raise LogEndError("the broker closed the connection inside its answer")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
