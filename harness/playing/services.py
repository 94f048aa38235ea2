"""The app under test as each of a run's services runs it: its command (the user's or the
reference app), its client settings, how reports name it, and its supervisor under the app
contract."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_replay.apps import AppContext, AppSpec, RestartPolicy, Supervisor
from kafka_replay.apps.client_config import distinct_members
from kafka_replay.apps.client_libraries import JVM_CLIENT, app_python_path, parse_client
from kafka_replay.apps.flink_runtime import FLINK_JOB, reference_job_jar
from kafka_replay.apps.jvm_apps import JvmAppError, java_command
from kafka_replay.definitions.command_text import fill_here
from kafka_replay.definitions.model import AppDefinition, Incident, Profile
from kafka_replay.history import RunHistory
from kafka_replay.history.group import group_members, group_stable

from .run_options import RunOptions
from .share_group import members_ready

if TYPE_CHECKING:
    from kafka_replay.cluster import Cluster
    from kafka_replay.faults.share_group_admin import ShareGroupWatch
    from kafka_replay.sinks.database import Database


@dataclass
class Serving:
    """The cluster the apps are served by: the run's, until a ``fail_over`` step moves them to
    its mirror. Each instance's contract and readiness are read from it as the instance starts.
    """

    cluster: Cluster


#: Client settings the KIP-848 ``consumer`` protocol moves to the broker.
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")


def client_config(profile: Profile, group_protocol: str | None) -> dict[str, Any]:
    """The client settings the app is told to use, in Apache Kafka's names.

    The contract hands them over in both dialects (``REPLAY_CLIENT_PROPERTIES``, and the
    librdkafka translation in ``REPLAY_CLIENT_CONFIG``); the run's meta records these names.
    """
    config = dict(profile.client)
    if group_protocol == "consumer":
        config = {k: v for k, v in config.items() if k not in CLASSIC_ONLY}
        config["group.protocol"] = "consumer"
    elif group_protocol is not None:
        config["group.protocol"] = group_protocol
    return config


def app_command(
    incident: Incident,
    profile: Profile,
    options: RunOptions,
    topics: Mapping[str, str],
    service: str = "app",
) -> AppSpec:
    """The app to run as ``service`` (a pipeline's, or the one app): the user's, or the
    reference app with its ``{python}`` and topics.

    ``--app NAME=COMMAND`` puts the user's app in the place of service ``NAME``; a plain
    ``--app`` takes the last service's (the one whose results are judged); ``--app-image``
    likewise, with ``--app`` as the container's arguments when both aim at the service. With
    ``kafka-clients==VERSION`` as the client library, the reference app is the JVM one
    (``[app] jvm``), its ``{java}`` compiled and run against that release.
    """
    services = profile.services
    here = incident.source.parent
    users, image = options.app, options.app_image
    users_here = users is not None and users.place(services) == service
    if image is not None and image.place(services) == service:
        arguments = users.text if users is not None and users_here else ""
        return AppSpec.parse(fill_here(arguments, here), image=image.text)
    if users is not None and users_here:
        return AppSpec.parse(fill_here(users.text, here))
    app = services[service]
    if app.image is not None:
        return AppSpec.parse(fill_here(app.command, here), image=app.image)
    library = parse_client(options.client_library) if options.client_library else None
    if library is not None and library[0] == JVM_CLIENT:
        if app.jvm is None:
            raise JvmAppError(f"{incident.name} has no JVM reference app ([app] jvm)")
        java = java_command(incident.source.parent, library[1])
        command = app.jvm.replace("{java}", java)
    else:
        command = app.command.replace("{python}", sys.executable)
    if FLINK_JOB in command:  # the definition's reference Flink job, compiled beside it
        command = command.replace(FLINK_JOB, str(reference_job_jar(here)))
    side_effects = topics.get("side_effects", "")
    return AppSpec.parse(fill_here(command, here).replace("{side_effects_topic}", side_effects))


def app_images(profile: Profile, options: RunOptions) -> set[str]:
    """The container images the run's services start from (the user's, or the definition's
    where the user's app does not take a service's place)."""
    services = profile.services
    images = {}
    if options.app_image is not None:
        images[options.app_image.place(services)] = options.app_image.text
    users = options.app.place(services) if options.app is not None else None
    for name, app in services.items():
        if app.image is not None and name not in images and name != users:
            images[name] = app.image
    return set(images.values())


def supervise(
    name: str | None,
    app: AppDefinition,
    spec: AppSpec,
    config: Mapping[str, Any],
    group: str,
    *,
    incident: Incident,
    serving: Serving,
    history: RunHistory,
    topics: Mapping[str, str],
    options: RunOptions,
    registry_url: str | None = None,
    database: Database | None = None,
    share_watch: ShareGroupWatch | None = None,
) -> Supervisor:
    """The supervisor of one app (of a pipeline's service ``name``): its instances get the
    contract with their group, their first read and written topics, and every topic, and
    count as up once the group has them all (a share group's watch says so for a share group),
    on the cluster that ``serving`` names as they start."""
    reads, writes = app.reads or ("input",), app.writes or ("output",)

    def ready(members: int) -> bool:
        cluster = serving.cluster
        if cluster.lists_group_members:
            return group_members(cluster.admin(), group) >= distinct_members(config, members)
        return group_stable(cluster.admin(), group)

    return Supervisor(
        spec,
        lambda i: AppContext(
            serving.cluster.client_bootstrap_servers,
            topics[reads[0]],
            topics.get(writes[0], ""),  # none when the app's results are only rows
            group,
            dict(config),
            i,
            properties_dir=history.root / (f"client-{name}" if name else ""),
            schema_registry=registry_url,
            database_url=database.url if database else None,
            jdbc_url=database.jdbc_url if database else None,
            database_schema=database.schema if database else None,
            topics={topic: topics[topic] for topic in incident.topics},
        ),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
        policy=RestartPolicy(restart=options.restart or app.restart, delay_s=app.restart_delay_s),
        report_dir=history.events_dir,
        ready=members_ready(share_watch) if share_watch is not None else ready,
        python_path=app_python_path(options.client_library),
        name=name,
    )
