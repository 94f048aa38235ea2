"""A run's start-up, one resource after another: its cluster, topics (:mod:`.topics`), schema
registry (:mod:`.workloads`), database (:mod:`.run_database`), share group and apps
(:mod:`.services`; supervisors not started yet), and the run's meta.

Each resource is kept in the run's record (:class:`~.run_record.RunRecord`) as soon as it
exists, so that its release stops what was started whatever stage the run reached.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from kafka_replay.apps import Supervisor
from kafka_replay.apps.image_app import check_app_image
from kafka_replay.cluster import Cluster, ClusterFor, ClusterNeeds
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.definitions.model import AppDefinition, Incident, Profile
from kafka_replay.definitions.shapes import with_expect_file
from kafka_replay.definitions.vocabulary import step_kinds
from kafka_replay.judging.pipeline import services_meta

from .group_protocol import consumer_protocol_missing, moves_to_consumer_protocol
from .mirror import start_mirror
from .run_options import RunOptions
from .run_record import RunRecord
from .services import Serving, app_command, app_images, client_config, supervise
from .share_group import check_share_groups, start_share_group
from .topics import create_topics
from .workloads import needs_registry, registered, start_registry, with_expectations, with_payload

if TYPE_CHECKING:
    pass


def start_up(
    run: RunRecord,
    options: RunOptions,
    cluster_for: ClusterFor,
    progress: Callable[[str], None],
) -> None:
    """Start everything the run's steps need into ``run``, and write the run's meta."""
    if options.expect is not None:
        run.incident = with_expect_file(run.incident, options.expect)
    incident, profile, history = run.incident, run.profile, run.history
    if options.users_app and incident.your_app and not incident.your_app.applies:
        raise NotApplicable(f"not applicable to an app: {incident.your_app.tests}")
    for image in app_images(profile, options):
        check_app_image(image)  # before any broker starts: Docker answers, the image is here
    needs = ClusterNeeds(
        profile.broker, incident.brokers, incident.network_faults, incident.features
    )
    run.cluster = cluster = cluster_for(needs)
    run.serving = serving = Serving(cluster)
    run.settings_not_applied = applicability(incident, profile, cluster)
    if incident.group_type == "share":
        check_share_groups(cluster, options.client_library)
    if options.payload is not None:
        profile = with_payload(profile, options.payload)
    run.topics = topics = create_topics(cluster, incident, profile)
    profile = with_expectations(profile, incident)
    if needs_registry(profile):
        run.registry = start_registry(history, progress)
        profile = registered(profile, topics, run.registry)
    run.profile = profile
    if profile.sink is not None:
        from .run_database import new_database, start_database

        run.database = new_database(options, cluster.backend, history, progress)
        start_database(run.database, profile, history, progress)
    services = profile.services
    pipeline = bool(profile.apps)
    groups = {
        name: cluster.unique_name(f"{incident.name}-{name}" if pipeline else incident.name)
        for name in services
    }
    specs = {name: app_command(incident, profile, options, topics, name) for name in services}
    run.app = " -> ".join(spec.name for spec in specs.values())
    configs = {
        name: client_config(
            replace(profile, client={**profile.client, **app.client}), options.group_protocol
        )
        for name, app in services.items()
    }
    last = list(services)[-1]  # a pipeline's last service: the output's group
    history.write_meta(
        incident=incident.name,
        profile=profile.name,
        app=run.app,
        app_command=list(specs[last].argv) or specs[last].target,
        **({"app_image": specs[last].image} if specs[last].image else {}),
        guarantee=run.guarantee,
        topics=topics,
        topic_roles={name: incident.role(name) for name in incident.topics},
        group=groups[last],
        client_config=configs[last],
        broker_config=dict(profile.broker),
        client_library=options.client_library,
        bootstrap_servers=cluster.client_bootstrap_servers,
        observer_bootstrap_servers=cluster.bootstrap_servers,
        started=time.time(),
        **({"services": services_meta(services, specs, groups)} if pipeline else {}),
    )
    if incident.mirror is not None:  # fed before any app starts, as a standby cluster is
        run.mirror = start_mirror(
            incident.mirror,
            cluster,
            profile.broker,
            incident,
            topics,
            list(groups.values()),
            history,
            progress,
        )
    if incident.group_type == "share":  # its settings, then a watch on it (SPSO, members)
        run.share_watch = start_share_group(cluster, groups[last], topics["input"], history)

    def supervisor(name: str, app: AppDefinition) -> Supervisor:
        return supervise(
            name if pipeline else None,
            app,
            specs[name],
            configs[name],
            groups[name],
            incident=incident,
            serving=serving,
            history=history,
            topics=topics,
            options=options,
            registry_url=run.registry.url if run.registry is not None else None,
            database=run.database,
            share_watch=run.share_watch,
        )

    run.supervisors = {name: supervisor(name, app) for name, app in services.items()}
    run.reads = {
        groups[name]: tuple(topics[t] for t in app.reads or incident.named("input"))
        for name, app in services.items()
    }


def applicability(incident: Incident, profile: Profile, cluster: Cluster) -> dict[str, str]:
    """The broker settings and feature levels the run goes without (with why), or NotApplicable.

    A cluster that takes no broker settings (an external one, another vendor's broker) runs
    the incident without those that only compress time or relax a limit; an essential one, or
    a step the cluster cannot play, means the incident does not apply to it. A release that
    takes no feature levels at format runs the levels it has.
    """
    where = cluster.label
    for step in incident.steps:
        needs = step_kinds()[step.do].needs_for(step.options)
        if needs in cluster.lacks:
            raise NotApplicable(f"step {step.do}: {cluster.lacks[needs]}")
    if moves_to_consumer_protocol(incident, profile):
        missing = consumer_protocol_missing(cluster)
        if missing is not None:
            raise NotApplicable(f"its app moves to group.protocol=consumer: {missing}")
    levels = levels_not_set(incident, cluster)
    if cluster.takes_broker_settings:
        return levels
    needs = {key: incident.need(key) for key in profile.broker}
    essential = [
        f"{key}={profile.broker[key]} ({need})"
        for key, need in needs.items()
        if need.kind == "essential"
    ]
    if essential:
        raise NotApplicable(
            f"it needs broker setting {'; '.join(essential)}, which {where} cannot take"
        )
    return {**levels, **{key: str(need) for key, need in needs.items()}}


def levels_not_set(incident: Incident, cluster: Cluster) -> dict[str, str]:
    """The incident's ``[features]`` its cluster was not formatted with, each with why."""
    why = type(cluster).features_refused(cluster.version) or "not set"
    return {
        f"feature {name}={level}": why
        for name, level in incident.features.items()
        if cluster.features.get(name) != level
    }
