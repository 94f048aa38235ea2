"""A partition's log end offset on its leader: where its own log ends, copied or not.

Clients are told the high watermark (what every in-sync replica holds); the records between it
and the leader's log end are on the leader alone. A broker answers a ListOffsets request for the
latest offset with its log end instead when the request names a replica (``replica_id`` -2,
Kafka's "debugging" replica), so the question is asked in the protocol itself, encoded and read
with its generated types (``kio``), on one connection to that broker.
"""

from __future__ import annotations

from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.list_offsets.v7.response import ListOffsetsResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from .kafka_ask import AskError, ask

#: ``replica_id`` of a request made on a replica's behalf for debugging: answered from the log.
DEBUGGING_REPLICA = -2
#: ListOffsets' "latest" timestamp.
LATEST = -1


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
    try:
        response = ask(host, port, request, ListOffsetsResponse, "kafka-replay-log-end", timeout)
    except AskError as exc:
        raise LogEndError(str(exc)) from exc
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
