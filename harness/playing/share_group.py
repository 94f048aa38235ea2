"""What a run does differently when the app's group is a share group (``[group] type = "share"``).

A share group (KIP-932) has no committed offsets: the broker tracks each record (acquired,
acknowledged, archived) and the share-partition start offset (SPSO) moves past the records it
is done with. So the run gives the group its settings before any member joins (Kafka's
``share.auto.offset.reset`` is ``latest``: the backlog produced before would be skipped), sees
the app join in the group's own description, and drains until the broker is done with every
record (every partition's lag 0); confluent-kafka can ask none of that, so the JVM tool of
:mod:`kafka_replay.faults.share_group_admin` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka_replay.apps.client_libraries import PYTHON_CLIENT, parse_client
from kafka_replay.cluster import Cluster
from kafka_replay.cluster.capabilities import lacks_by_version
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.definitions.model import GROUP_TYPE_NEEDS
from kafka_replay.faults.share_group_admin import (
    GROUP_DEFAULTS,
    ShareGroupWatch,
    configure_share_group,
    done_below,
    share_group_done,
)
from kafka_replay.history import RunHistory

#: The first confluent-kafka release with a share consumer (KIP-932's ``ShareConsumer``).
SHARE_CONSUMER_SINCE = (2, 15)
#: How often the run describes the share group (the history's ``share_group`` stream).
SAMPLE_S = 1.0


def check_share_groups(cluster: Cluster, client_library: str | None = None) -> None:
    """NotApplicable, with the reason, when the cluster has no share groups, or the Python
    apps' confluent-kafka release (``--client-library``) has no share consumer."""
    release = cluster.version if cluster.runs_kafka else None
    lacks = {**lacks_by_version(release), **cluster.lacks}
    needs = GROUP_TYPE_NEEDS["share"]
    if needs in lacks:
        raise NotApplicable(f"the app's group is a share group: {lacks[needs]}")
    name, version = parse_client(client_library) if client_library else (None, "")
    if name == PYTHON_CLIENT and _release(version) < SHARE_CONSUMER_SINCE:
        raise NotApplicable(
            f"the app's group is a share group: confluent-kafka {version} has no ShareConsumer "
            f"(confluent-kafka {'.'.join(map(str, SHARE_CONSUMER_SINCE))} and later)"
        )


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3] if part.isdigit())


def start_share_group(
    cluster: Cluster, group: str, topic: str, history: RunHistory
) -> ShareGroupWatch:
    """Give the group its settings, then watch it (members, start offsets, lag) into the
    history's ``share_group`` stream until :meth:`ShareGroupWatch.stop`."""
    settings = configure_share_group(cluster.bootstrap_servers, group, GROUP_DEFAULTS)
    stream, lag = history.stream("share_group"), history.stream("lag")
    stream.append({"kind": "configured", **settings})

    def record(sample: dict[str, Any]) -> None:
        stream.append({"kind": "sample", **sample})
        for row in lag_rows(sample):
            lag.append(row)

    log = history.logs_dir / "share-admin.log"
    return ShareGroupWatch(cluster.bootstrap_servers, group, topic, record, SAMPLE_S, log)


def lag_rows(sample: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A description as the ``lag`` stream's rows: ``committed`` is where the broker is done
    with the partition (``done_below``), so the committed-offset timeline, the checker (an
    input the group moved past with no result is lost, not merely unseen) and the lag read a
    share group as they read a consumer group."""
    rows = []
    for row in sample.get("partitions", []):
        done = done_below(row)
        rows.append(
            {
                "group": sample["group"],
                "topic": sample["topic"],
                "partition": row["partition"],
                "committed": done,
                "end": row["end"],
                "lag": row["end"] - done if done is not None else row["end"],
            }
        )
    return rows


def members_ready(watch: ShareGroupWatch) -> Callable[[int], bool]:
    """The supervisor's readiness probe: the group's description names that many members."""
    return lambda members: len((watch.latest or {}).get("members", [])) >= members


def drained(watch: ShareGroupWatch, acked: Mapping[int, int]) -> Callable[[], bool]:
    """The drain's check: the broker done with every partition (see share_group_done)."""
    return lambda: share_group_done(watch.latest, acked)
