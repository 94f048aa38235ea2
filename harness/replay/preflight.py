"""What the chosen settings need before any broker starts, refused at once with what to do.

One check, made by the command line, compare and pytest alike: the user's app can take its
place in every incident named (a service it has, a command or an image that exists), the client
library the apps run with is fetched, the Kafka release too (where the harness starts brokers),
and a team's database answers where a run writes rows to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafka_replay.cluster.backends import backend_class, backend_version
from kafka_replay.cluster.versions import TESTED_KAFKA_VERSIONS
from kafka_replay.definitions.app_option import GivenApp, check_placed_app
from kafka_replay.definitions.model import Incident
from kafka_replay.servers.server_errors import ArtifactResolutionError

if TYPE_CHECKING:
    from kafka_replay.playing.run_options import RunOptions

    from .settings import RunSettings

#: Shows that something slow is under way while it is (the command line's spinner).
Waiting = Callable[[str], contextlib.AbstractContextManager[object]]


def check_before_starting(
    settings: RunSettings,
    options: RunOptions,
    incidents: Sequence[Incident],
    *,
    kafka: bool = True,
    waiting: Waiting = lambda said: contextlib.nullcontext(),
) -> None:
    """Raise ValueError, saying what to change, for what would only fail after a broker
    started. ``options``: the runs' (the settings' own, or with a test's keywords over them);
    ``kafka``: also fetch the release the harness will start (compare's sides fetch their own).
    """
    check_placed_app(options.app, options.app_image, incidents)
    if options.client_library:
        _fetch_client_library(options.client_library, options.app, waiting)
    if kafka and settings.kafka_bootstrap is None:
        _fetch_kafka(settings)
    if options.database_url and any(p.sink for i in incidents for p in i.profiles.values()):
        _check_database(options.database_url)


def _fetch_client_library(spec: str, app: GivenApp | None, waiting: Waiting) -> None:
    """The client release the apps run with, fetched now (once) so a bad one fails at once."""
    from kafka_replay.apps.client_libraries import JVM_CLIENT, parse_client, python_client_path
    from kafka_replay.apps.jvm_apps import kafka_clients_classpath

    name, version = parse_client(spec)
    if name == JVM_CLIENT and app:
        raise ValueError(
            f"--client-library {spec} runs the JVM reference apps; your own app (--app) brings "
            "its own kafka-clients in its build"
        )
    with waiting(f"{spec} for the apps (fetched once, then cached)…"):
        if name != JVM_CLIENT:
            python_client_path(spec)
            return
        try:
            kafka_clients_classpath(version)
        except ArtifactResolutionError as exc:
            raise ValueError(
                f"{spec} could not be fetched from Maven Central: {str(exc).splitlines()[0]}"
            ) from exc


def _fetch_kafka(settings: RunSettings) -> None:
    """The Kafka release the first run starts, fetched now: a release Maven Central does not
    have is refused before anything else starts."""
    version = backend_version(settings.kafka_backend, settings.kafka_version)
    try:
        backend_class(settings.kafka_backend).fetch(version)
    except ArtifactResolutionError as exc:
        cause = str(exc).splitlines()[0]
        raise ValueError(
            f"Kafka {version} could not be fetched from Maven Central; choose a released "
            f"version with --kafka-version (tested: {', '.join(TESTED_KAFKA_VERSIONS)}; every "
            "release: https://repo1.maven.org/maven2/org/apache/kafka/kafka_2.13/). "
            f"{cause}"
        ) from exc


def _check_database(url: str) -> None:
    """A team's database (``--database-url``) answers, and lets its user make the schema each
    run works in."""
    from kafka_replay.sinks.database import PostgresError
    from kafka_replay.sinks.external_database import ExternalDatabase

    try:
        ExternalDatabase(url).check_reachable()
    except PostgresError as exc:
        raise ValueError(f"--database-url: {exc}") from None
