"""A run's start-up, one resource after another: its cluster, topics (:mod:`.topics`), schema
registry (:mod:`.workloads`), database (:mod:`.run_database`), share group and apps
(:mod:`.services`; supervisors not started yet), and the run's meta.

Each resource is kept in :class:`Started` as soon as it exists, so that :meth:`Started.release`
stops what was started whatever stage the run reached (a failure halfway, Ctrl-C).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kafka_replay.apps import Supervisor
from kafka_replay.apps.image_app import check_app_image
from kafka_replay.cluster import Cluster, ClusterFor
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.definitions.model import AppDefinition, Incident, Profile
from kafka_replay.definitions.shapes import with_expect_file
from kafka_replay.definitions.vocabulary import step_kinds
from kafka_replay.history import RunHistory
from kafka_replay.judging.pipeline import services_meta
from kafka_replay.report.outcome import Outcome

from .group_protocol import consumer_protocol_missing, moves_to_consumer_protocol
from .mirror import RunMirror, start_mirror
from .run_options import RunOptions
from .services import Serving, app_command, app_images, client_config, supervise
from .share_group import check_share_groups, start_share_group
from .topics import create_topics, delete_topics
from .workloads import needs_registry, registered, start_registry, with_expectations, with_payload

if TYPE_CHECKING:
    from kafka_replay.faults.share_group_admin import ShareGroupWatch
    from kafka_replay.sinks.database import Database
    from kafka_replay.workload.schema_registry import SchemaRegistry


@dataclass
class Started:
    """What a run's start-up started, each kept as soon as it exists; released at the end."""

    incident: Incident
    profile: Profile
    cluster: Cluster | None = None
    topics: dict[str, str] = field(default_factory=dict)
    registry: SchemaRegistry | None = None
    database: Database | None = None
    share_watch: ShareGroupWatch | None = None  # a share group's (see share_group)
    #: Each service's supervisor (its instances come from the steps), upstream first.
    supervisors: dict[str, Supervisor] = field(default_factory=dict)
    #: What each group reads (the topics as created), by group; the output's group last.
    reads: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: The run's mirror (``[mirror]``), and the cluster the apps are served by.
    mirror: RunMirror | None = None
    serving: Serving | None = None

    def release(self, history: RunHistory) -> list[str]:
        """Stop what was started, keep the broker logs and drop the run's topics; never raises:
        returns what could not be cleaned up, as reasons for the outcome."""
        failed = []
        if self.share_watch is not None:
            self.share_watch.stop()  # ends its JVM; never raises
        if self.registry is not None:
            self.registry.stop()  # SIGTERM, then SIGKILL: it never raises
        if self.database is not None:
            try:
                self.database.stop()
            except Exception as exc:  # a team's schema kept: said, never hidden
                failed.append(f"cleaning up the run's database failed: {exc}")
        try:
            if self.cluster is not None:
                history.keep_logs(self.cluster.log_files())
                delete_topics(self.cluster, self.topics)
        except Exception as exc:  # a dead broker must not hide the outcome
            failed.append(f"cleaning up the run's topics failed: {exc}")
        if self.mirror is not None:
            failed += self.mirror.release()
        return failed


def start_up(
    started: Started,
    options: RunOptions,
    history: RunHistory,
    outcome: Outcome,
    cluster_for: ClusterFor,
    progress: Callable[[str], None],
) -> None:
    """Start everything the run's steps need into ``started``, and write the run's meta."""
    if options.expect is not None:
        started.incident = with_expect_file(started.incident, options.expect)
    incident, profile = started.incident, started.profile
    if options.users_app and incident.your_app and not incident.your_app.applies:
        raise NotApplicable(f"not applicable to an app: {incident.your_app.tests}")
    for image in app_images(profile, options):
        check_app_image(image)  # before any broker starts: Docker answers, the image is here
    started.cluster = cluster = cluster_for(
        profile.broker, incident.brokers, incident.network_faults, incident.features
    )
    started.serving = serving = Serving(cluster)
    outcome.settings_not_applied = applicability(incident, profile, cluster)
    if incident.group_type == "share":
        check_share_groups(cluster, options.client_library)
    if options.payload is not None:
        profile = with_payload(profile, options.payload)
    started.topics = topics = create_topics(cluster, incident, profile)
    profile = with_expectations(profile, incident)
    if needs_registry(profile):
        started.registry = start_registry(history, progress)
        profile = registered(profile, topics, started.registry)
    started.profile = profile
    if profile.sink is not None:
        from .run_database import new_database, start_database

        started.database = new_database(options, cluster.backend, history, progress)
        start_database(started.database, profile, history, progress)
    services = profile.services
    pipeline = bool(profile.apps)
    groups = {
        name: cluster.unique_name(f"{incident.name}-{name}" if pipeline else incident.name)
        for name in services
    }
    specs = {name: app_command(incident, profile, options, topics, name) for name in services}
    outcome.app = " -> ".join(spec.name for spec in specs.values())
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
        app=outcome.app,
        app_command=list(specs[last].argv) or specs[last].target,
        **({"app_image": specs[last].image} if specs[last].image else {}),
        guarantee=outcome.guarantee,
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
        started.mirror = start_mirror(
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
        started.share_watch = start_share_group(cluster, groups[last], topics["input"], history)

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
            registry_url=started.registry.url if started.registry is not None else None,
            database=started.database,
            share_watch=started.share_watch,
        )

    started.supervisors = {name: supervisor(name, app) for name, app in services.items()}
    started.reads = {
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
