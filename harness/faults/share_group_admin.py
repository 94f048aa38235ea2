"""Ask the brokers about a share group (KIP-932), and give it its group-level settings.

librdkafka (confluent-kafka) has no DescribeShareGroups nor DescribeShareGroupOffsets, and the
broker's Maven artifacts carry no ``kafka-share-groups.sh``; Kafka's Java ``Admin`` has them,
so a small JVM tool, ``jvm/ShareAdmin.java``, does the asking, compiled once and cached like
``TransactionAdmin`` beside it. A run watches its share group with one long-lived ``watch``
process (a JSON line every interval) instead of starting a JVM per look.

A share partition's start offset (SPSO) is where the group's work on it begins: every record
before it was acknowledged (accepted, rejected) or archived (the delivery-count limit, or a
release at it). ``-1`` means the group holds no state for the partition yet.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from .admin_tools import TIMEOUT_S, admin_tool_command, run_admin_tool

MAIN_CLASS = "ShareAdmin"
#: Kafka's default is latest: a share group would skip the records produced before it exists.
GROUP_DEFAULTS = {"share.auto.offset.reset": "earliest"}

__all__ = [
    "GROUP_DEFAULTS",
    "ShareAdminError",
    "ShareGroupWatch",
    "configure_share_group",
    "describe_share_group",
    "done_below",
    "share_group_done",
]


class ShareAdminError(RuntimeError):
    """The share-group tool failed; the message carries the tail of what it said on stderr."""


def _command(*args: str, timeout: float = TIMEOUT_S) -> list[str]:
    return admin_tool_command(MAIN_CLASS, "share.admin", args, timeout)


def _run(*args: str, timeout: float = TIMEOUT_S) -> dict[str, Any]:
    return run_admin_tool(MAIN_CLASS, "share.admin", args, timeout, ShareAdminError)


def configure_share_group(bootstrap: str, group: str, settings: Mapping[str, Any]) -> dict:
    """Set group-level configs (``share.auto.offset.reset``, ``share.record.lock.duration.ms``,
    ...) on ``group`` before any member joins: IncrementalAlterConfigs on the GROUP resource."""
    pairs = [f"{key}={value}" for key, value in settings.items()]
    return _run("configure", bootstrap, group, *pairs)


def describe_share_group(bootstrap: str, group: str, topic: str) -> dict:
    """``{"group", "state", "members": [{"memberId", "clientId", "partitions"}],
    "partitions": [{"partition", "startOffset", "lag", "end"}]}`` as the brokers say now."""
    return _run("describe", bootstrap, group, topic)


def done_below(row: Mapping[str, Any]) -> int | None:
    """The offset below which the share group is done with a partition (every record
    acknowledged or archived), from one row of a description; None while it holds no state.

    The start offset (SPSO) stays on the last record even once it is acknowledged, while the
    lag (KIP-1226) is then 0: so a lag of 0 means done up to the end.
    """
    if row["startOffset"] < 0:
        return None
    return row["end"] if row["lag"] == 0 else row["startOffset"]


def share_group_done(sample: Mapping[str, Any] | None, acked: Mapping[int, int]) -> bool:
    """Whether the group is through its input: done up to every partition's log end (and past
    every input the workload producer had acknowledged there)."""
    if not sample or "partitions" not in sample:
        return False
    for row in sample["partitions"]:
        end = max(row["end"], acked.get(row["partition"], 0))
        if end > 0 and (done_below(row) or 0) < end:
            return False
    return True


class ShareGroupWatch:
    """One ``ShareAdmin watch`` process describing the group every ``interval_s``; each line
    goes to ``sink`` (a history stream) and the newest is kept for the drain's check."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        sink: Callable[[dict[str, Any]], None],
        interval_s: float = 1.0,
        log: Path | None = None,
    ) -> None:
        self.latest: dict[str, Any] | None = None
        self._sink = sink
        self._log = log.open("ab") if log is not None else None  # the tool's own stderr
        self._process = subprocess.Popen(
            _command("watch", bootstrap, group, topic, str(int(interval_s * 1000))),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name="share-group-watch", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout: IO[str] | None = self._process.stdout
        for line in stdout or []:
            try:
                sample = json.loads(line)
            except ValueError:
                continue
            self._sink(sample)
            if "partitions" in sample:
                self.latest = sample

    def stop(self) -> None:
        """End the watch (its stdin closed; killed if it does not go) and read its last line."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(5)
        if self._log is not None:
            self._log.close()
