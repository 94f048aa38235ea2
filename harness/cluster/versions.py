"""Which Apache Kafka releases the embedded broker runs, and how a version is chosen."""

from __future__ import annotations

import os
import re

VERSION_ENV = "KAFKA_REPLAY_VERSION"

#: The newest 4.x release on Maven Central; used when nothing else is asked for.
DEFAULT_KAFKA_VERSION = "4.4.0"

#: Releases the test suite runs against: the newest 4.x, the last 4.0.x and the last 3.9.x.
TESTED_KAFKA_VERSIONS = ("4.4.0", "4.0.2", "3.9.2")

#: The oldest release whose KRaft mode the harness supports.
MINIMUM_KAFKA_VERSION = (3, 9)

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def parse_version(version: str) -> tuple[int, int, int]:
    """Split ``"4.1.0"`` into numbers, refusing anything that is not a plain release."""
    match = _VERSION.match(version.strip())
    if not match:
        raise ValueError(f"Kafka version {version!r} is not a release number like 4.1.0")
    major, minor, patch = (int(part) for part in match.groups())
    if (major, minor) < MINIMUM_KAFKA_VERSION:
        oldest = ".".join(map(str, MINIMUM_KAFKA_VERSION))
        raise ValueError(f"Kafka {version} is older than {oldest}.0, the oldest supported release")
    return major, minor, patch


def choose_version(requested: str | None = None) -> str:
    """The version asked for, else ``$KAFKA_REPLAY_VERSION``, else the newest 4.x."""
    version = requested or os.environ.get(VERSION_ENV) or DEFAULT_KAFKA_VERSION
    parse_version(version)
    return version.strip()


TANSU_VERSION_ENV = "KAFKA_REPLAY_TANSU_VERSION"
#: The Tansu release the ``tansu`` backend builds when none is named (the newest on crates.io).
DEFAULT_TANSU_VERSION = "0.6.0"


def choose_tansu_version(requested: str | None = None) -> str:
    """The Tansu release asked for, else ``$KAFKA_REPLAY_TANSU_VERSION``, else the default."""
    version = (requested or os.environ.get(TANSU_VERSION_ENV) or DEFAULT_TANSU_VERSION).strip()
    if not _VERSION.match(version):
        raise ValueError(f"Tansu version {version!r} is not a release number like 0.6.0")
    return version
