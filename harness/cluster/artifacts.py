"""Kafka's broker jars from Maven Central, resolved once and then served from the user's cache
(by :mod:`kafka_replay.servers.maven`)."""

from __future__ import annotations

from pathlib import Path

from kafka_replay.servers.maven import Artifact, resolve_classpath

#: The logging backend added to the broker (CI's cache key hashes this file, so a bump here
#: starts a fresh cache).
LOG4J_VERSION = "2.25.5"


def broker_artifacts(version: str) -> list[Artifact]:
    """What a Kafka broker needs at run time.

    Kafka's published POMs carry no logging backend (the distribution tarball adds one), so
    log4j2 is added with bridges for the SLF4J and log4j 1.x APIs that 3.9.x and 4.x use.
    ``kafka-tools-api`` only serves the command-line tools and is missing from Maven Central
    for some releases, so it is left out.
    """
    log4j = [
        Artifact("org.apache.logging.log4j", name, LOG4J_VERSION)
        for name in ("log4j-api", "log4j-core", "log4j-slf4j-impl", "log4j-1.2-api")
    ]
    kafka = Artifact(
        "org.apache.kafka", "kafka_2.13", version, exclude=("org.apache.kafka:kafka-tools-api",)
    )
    return [kafka, *log4j]


def kafka_classpath(version: str) -> list[Path]:
    """The broker classpath for a Kafka release, resolved on first use."""
    return resolve_classpath(f"kafka-{version}", broker_artifacts(version))
