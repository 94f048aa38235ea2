"""Run one incident under one profile: set the stage, play the steps, check every record.

Each run gets its own directory (the run history format of ``docs/history.md`` plus
``check.json`` and ``outcome.json``), its own topics and consumer group, and a cluster with
the profile's broker config. :func:`kafka_replay.judging.judge.judge` turns what was measured into
the outcome. Whatever stage fails (start-up, a step, the checker, the symptoms), the run still
ends with an outcome naming that stage and its error, and the history kept so far.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_replay.apps import (
    AppContext,
    AppSpec,
    AppStartError,
    RestartPolicy,
    Supervisor,
    load_callable,
)
from kafka_replay.apps.client_config import distinct_members
from kafka_replay.apps.client_libraries import JVM_CLIENT, app_python_path, parse_client
from kafka_replay.apps.image_app import check_app_image
from kafka_replay.apps.jvm_apps import JvmAppError, java_command
from kafka_replay.cluster import Cluster
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.definitions.app_option import users_app
from kafka_replay.definitions.model import WRITTEN_ROLES, AppDefinition, Incident, Profile
from kafka_replay.definitions.shapes import with_expect_file
from kafka_replay.definitions.vocabulary import step_kinds
from kafka_replay.faults import holders
from kafka_replay.history import LagSampler, OffsetsRecorder, RunHistory
from kafka_replay.history.group import group_members, group_stable
from kafka_replay.history.lag import commits_from_samples
from kafka_replay.history.stable_offsets import StableOffsetSampler, settle, settle_timeout_s
from kafka_replay.interrupts import interrupted
from kafka_replay.judging.pipeline import services_meta
from kafka_replay.judging.played import Checked, Played, apply_rule, check_played, measure_symptoms
from kafka_replay.report.outcome import Outcome

from .group_protocol import consumer_protocol_missing, moves_to_consumer_protocol
from .share_group import (
    archived_reason,
    check_share_groups,
    members_ready,
    start_share_group,
)
from .stage import Stage, StepFailed, run_steps, stop_background

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_replay.faults.share_groups import ShareGroupWatch
    from kafka_replay.sinks.database import Database
    from kafka_replay.workload.registry import SchemaRegistry

#: Client settings the KIP-848 ``consumer`` protocol moves to the broker.
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")
LAG_SAMPLE_S = 0.5
#: ``cluster_for(broker_config, brokers, network_faults)``: the cluster a run plays on.
ClusterFor = Callable[[Mapping[str, Any], int, bool], Cluster]


@dataclass(frozen=True)
class RunOptions:
    """What the person running the catalog chose, over the definition's defaults."""

    app: str | None = None  # the user's app: a command line or module:function
    #: the user's app as a container image (``[NAME=]IMAGE``); ``app``: its arguments
    app_image: str | None = None
    output_id: str | None = None  # module:function(OutputRecord) -> event_id
    #: a ``--payload`` file: a team's messages in every workload's records
    payload: Path | None = None
    #: an ``--expect`` file: what the user's app makes of each input, and the topics it writes
    expect: Path | None = None
    #: a PostgreSQL database of the user's for incidents with a ``[sink]`` (the run owns one
    #: schema there); None: a server of the run's own
    database_url: str | None = None
    guarantee: str | None = None  # what the user's app declares
    group_protocol: str | None = None  # classic or consumer (KIP-848)
    restart: str | None = None  # the app's restart policy (default: the definition's)
    #: ``confluent-kafka==V`` (Python apps run with it, the harness keeps its own) or
    #: ``kafka-clients==V`` (the JVM reference apps run on it).
    client_library: str | None = None
    #: Client and broker settings put over the profile's ("we changed our consumer config").
    client: Mapping[str, Any] = field(default_factory=dict)
    broker: Mapping[str, Any] = field(default_factory=dict)
    #: The longest to wait for open transactions before the check (default: as long as the
    #: app's transaction timeout lets one last; see ``settle_timeout_s``).
    settle_timeout_s: float | None = None
    #: Every run setting as chosen (see :mod:`.settings`), recorded in ``run.json``.
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def users_app(self) -> bool:
        """The user's app runs (a command, a callable or an image), not the reference app."""
        return bool(self.app or self.app_image)

    def apply(self, profile: Profile) -> Profile:
        """The profile with these settings over its own."""
        if not self.client and not self.broker:
            return profile
        return replace(
            profile,
            client={**profile.client, **self.client},
            broker={**profile.broker, **self.broker},
        )


def with_expectations(profile: Profile, incident: Incident) -> Profile:
    """The profile whose workloads mark the inputs ``[expect]``'s predicates name (``bad``,
    ``filtered``) for the place a correct service puts them."""
    from kafka_replay.workload.expect import marked

    chosen = incident.expect.predicates
    if not chosen:
        return profile
    predicates = {place: (spec, load_callable(spec)) for place, spec in chosen.items()}
    names = incident.topic_names()
    workloads = {
        key: marked(workload, names[workload.topic or "input"], predicates)
        for key, workload in profile.workloads.items()
    }
    return replace(profile, workloads=workloads)


def with_payload(profile: Profile, payload: Path) -> Profile:
    """The profile whose workloads carry the messages of a ``--payload`` file: each keeps its
    keys, identities, timing and pauses."""
    from kafka_replay.definitions.workload_table import read_payload_file

    source = read_payload_file(payload)
    workloads = {name: source.values_for(w) for name, w in profile.workloads.items()}
    return replace(profile, workloads=workloads)


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
    users = users_app(options.app, services) if options.app else None
    image = users_app(options.app_image, services) if options.app_image else None
    if image is not None and image[0] == service:
        arguments = users[1] if users is not None and users[0] == service else ""
        return AppSpec.parse(arguments, image=image[1].strip())
    if users is not None and users[0] == service:
        return AppSpec.parse(users[1])
    app = services[service]
    if app.image is not None:
        return AppSpec.parse(app.command, image=app.image)
    library = parse_client(options.client_library) if options.client_library else None
    if library is not None and library[0] == JVM_CLIENT:
        if app.jvm is None:
            raise JvmAppError(f"{incident.name} has no JVM reference app ([app] jvm)")
        java = java_command(incident.source.parent, library[1])
        command = app.jvm.replace("{java}", java)
    else:
        command = app.command.replace("{python}", sys.executable)
    return AppSpec.parse(command.replace("{side_effects_topic}", topics.get("side_effects", "")))


def app_images(profile: Profile, options: RunOptions) -> set[str]:
    """The container images the run's services start from (the user's, or the definition's
    where the user's app does not take a service's place)."""
    services = profile.services
    images = {}
    if options.app_image:
        name, image = users_app(options.app_image, services)
        images[name] = image.strip()
    users = users_app(options.app, services)[0] if options.app else None
    for name, app in services.items():
        if app.image is not None and name not in images and name != users:
            images[name] = app.image
    return set(images.values())


def app_label(spec: AppSpec) -> str:
    """How reports name the app: its image, the module of ``python -m``, the class of
    ``java -cp``, else the spec's name."""
    if spec.image is not None:
        return spec.image
    argv = list(spec.argv)
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1]
    if os.path.basename(argv[0]) == "java" and "-cp" in argv[:-2]:
        return argv[argv.index("-cp") + 2]  # the main class
    return spec.name


def applicability(incident: Incident, profile: Profile, cluster: Cluster) -> dict[str, str]:
    """The broker settings the run goes without (with why they were there), or NotApplicable.

    A cluster that takes no broker settings (an external one, another vendor's broker) runs
    the incident without those that only compress time or relax a limit; an essential one, or
    a step the cluster cannot play, means the incident does not apply to it.
    """
    where = cluster.label
    for step in incident.steps:
        needs = step_kinds()[step.do].needs
        if needs in cluster.lacks:
            raise NotApplicable(f"step {step.do}: {cluster.lacks[needs]}")
    if moves_to_consumer_protocol(incident, profile):
        missing = consumer_protocol_missing(cluster)
        if missing is not None:
            raise NotApplicable(f"its app moves to group.protocol=consumer: {missing}")
    if cluster.takes_broker_settings:
        return {}
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
    return {key: str(need) for key, need in needs.items()}


def run_incident(
    incident: Incident,
    profile_name: str,
    *,
    cluster_for: ClusterFor,
    spark: Callable[[], SparkSession],
    run_dir: Path,
    options: RunOptions | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Outcome:
    """Replay ``incident`` under ``profile_name`` and judge it.

    ``cluster_for(broker_config, brokers, network_faults)`` gives the cluster; ``spark`` gives
    the checker's session when it is needed (not for a run that failed).
    """
    played = play_incident(
        incident, profile_name, cluster_for=cluster_for, run_dir=run_dir, options=options,
        progress=progress,
    )  # fmt: skip
    return played.conclude(spark)


def play_incident(
    incident: Incident,
    profile_name: str,
    *,
    cluster_for: ClusterFor,
    run_dir: Path,
    options: RunOptions | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> PlayedRun:
    """The first half of :func:`run_incident`: start-up and the steps, what the incident's own
    waits bound. Its :meth:`PlayedRun.conclude` (settling, the check, the judgement, clean-up)
    needs only the run's cluster, so a lane concludes one run while it plays the next."""
    run = PlayedRun(
        incident, profile_name, options or RunOptions(), RunHistory.new_run(run_dir), progress
    )
    try:
        with run.stopping_on_failure():
            run.play(cluster_for)
    except BaseException:  # Ctrl-C: the run's topics and helpers still go
        run.finish()
        raise
    return run


class PlayedRun:
    """One replay, stage by stage; :attr:`stage` names the one under way."""

    def __init__(
        self,
        incident: Incident,
        profile_name: str,
        options: RunOptions,
        history: RunHistory,
        progress: Callable[[str], None],
    ) -> None:
        self.options, self.history = options, history
        self.incident = incident.for_your_app() if options.users_app else incident
        self.profile = options.apply(self.incident.profiles[profile_name])
        self.progress = progress
        self.guarantee = options.guarantee or incident.guarantee
        self.started = self.stage_started = time.monotonic()
        self.stage = "start-up"
        self.cluster: Cluster | None = None
        self.topics: dict[str, str] = {}
        self.checked: Checked | None = None  # what the symptoms read, the place the gate takes
        self.registry: SchemaRegistry | None = None
        self.database: Database | None = None
        self.share_watch: ShareGroupWatch | None = None  # a share group's (see share_group)
        self.stopped = False  # a stage failed, or the run does not apply: nothing more to do
        if options.settings:
            history.write_meta(settings=dict(options.settings))
        self.outcome = Outcome(
            incident=incident.name,
            profile=profile_name,
            app=options.app_image or options.app or self.profile.app.command,
            guarantee=self.guarantee,
            verdict="unknown",
            passed=False,
            reproduced=None,
            anomalies={},
            symptoms={},
            duration_s=0.0,
            run_dir=str(history.root),
            group_protocol=options.group_protocol or "classic",
        )

    @contextlib.contextmanager
    def stopping_on_failure(self) -> Iterator[None]:
        """Any failure of a stage becomes the outcome's, which says what broke, and stops the
        run there; Ctrl-C goes on up."""
        try:
            yield
        except NotApplicable as exc:  # before anything ran: what the cluster could not give
            self.stopped = True
            self.outcome.applicable = False
            self.outcome.result = "not applicable"
            said = str(exc)
            self.outcome.reasons.append(
                said if said.startswith("not applicable") else f"not applicable here: {said}"
            )
        except Exception as exc:
            if interrupted(exc):
                raise KeyboardInterrupt from exc
            self.stopped = True
            stage = self.stage
            self.outcome.error = f"{type(exc).__name__}: {exc}" if stage != "steps" else str(exc)
            self.outcome.failed_stage = stage
            self.outcome.reasons.append(f"the run could not be judged: its {stage} failed")

    def conclude(self, spark: Callable[[], SparkSession]) -> Outcome:
        """Settle, check and judge a played run, then clean up: its outcome."""
        try:
            with self.stopping_on_failure():
                if not self.stopped:
                    self.settle()
                    self.check(spark)
                    self.measure_and_judge()
        finally:
            self.finish()
        return self.outcome

    def _enter(self, stage: str) -> None:
        """Close the stage under way (its time goes to the outcome) and start ``stage``."""
        now = time.monotonic()
        self.outcome.stage_s[self.stage] = round(now - self.stage_started, 1)
        self.stage, self.stage_started = stage, now

    def play(self, cluster_for: ClusterFor) -> None:
        if self.options.expect is not None:
            self.incident = with_expect_file(self.incident, self.options.expect)
        incident, profile, history = self.incident, self.profile, self.history
        if self.options.users_app and incident.your_app and not incident.your_app.applies:
            raise NotApplicable(f"not applicable to an app: {incident.your_app.tests}")
        for image in app_images(profile, self.options):
            check_app_image(image)  # before any broker starts: Docker answers, the image is here
        self.cluster = cluster = cluster_for(
            profile.broker, incident.brokers, incident.network_faults
        )
        self.outcome.settings_not_applied = applicability(incident, profile, cluster)
        if incident.group_type == "share":
            check_share_groups(cluster, self.options.client_library)
        if self.options.payload is not None:
            profile = self.profile = with_payload(profile, self.options.payload)
        replicas = min(3, incident.brokers)  # what a broker fault needs to keep the data
        created = {
            name: cluster.create_topic(
                f"{incident.name}-{name}", partitions, replicas, _topic_config(profile, name)
            )
            for name, partitions in incident.topics.items()
        }
        self.topics = topics = {
            name: created[topic] for name, topic in incident.topic_names().items()
        }
        profile = self.profile = self._registered(with_expectations(profile, incident), topics)
        database = self._database(profile)
        services = profile.services
        pipeline = bool(profile.apps)
        groups = {
            name: cluster.unique_name(f"{incident.name}-{name}" if pipeline else incident.name)
            for name in services
        }
        specs = {name: app_command(incident, profile, self.options, topics, name)
                 for name in services}  # fmt: skip
        self.outcome.app = " -> ".join(app_label(spec) for spec in specs.values())
        configs = {
            name: client_config(
                replace(profile, client={**profile.client, **app.client}),
                self.options.group_protocol,
            )
            for name, app in services.items()
        }
        last = list(services)[-1]  # a pipeline's last service: the output's group
        history.write_meta(
            incident=incident.name,
            profile=profile.name,
            app=self.outcome.app,
            app_command=list(specs[last].argv) or specs[last].target,
            **({"app_image": specs[last].image} if specs[last].image else {}),
            guarantee=self.guarantee,
            topics=topics,
            topic_roles={name: incident.role(name) for name in incident.topics},
            group=groups[last],
            client_config=configs[last],
            broker_config=dict(profile.broker),
            client_library=self.options.client_library,
            bootstrap_servers=cluster.client_bootstrap_servers,
            observer_bootstrap_servers=cluster.bootstrap_servers,
            started=time.time(),
            **({"services": services_meta(services, specs, groups, app_label)} if pipeline else {}),
        )
        if incident.group_type == "share":  # its settings, then a watch on it (SPSO, members)
            self.share_watch = start_share_group(cluster, groups[last], topics["input"], history)
        supervisors = {
            name: self._supervisor(
                name if pipeline else None, app, specs[name], configs[name], groups[name], database
            )
            for name, app in services.items()
        }
        reads = {
            groups[name]: tuple(topics[t] for t in app.reads or incident.named("input"))
            for name, app in services.items()
        }
        self._enter("steps")
        error = _play(
            incident, profile, cluster, history, topics, reads, supervisors, self.progress,
            share=self.share_watch,
        )  # fmt: skip
        if error is not None:
            raise StepFailed(error)
        self._enter("queued")  # until a lane's check of the run before is done

    def _supervisor(
        self,
        name: str | None,
        app: AppDefinition,
        spec: AppSpec,
        config: Mapping[str, Any],
        group: str,
        database: Database | None,
    ) -> Supervisor:
        """The supervisor of one app (of a pipeline's service ``name``): its instances get the
        contract with their group, their first read and written topics, and every topic."""
        assert self.cluster is not None
        cluster, history, topics = self.cluster, self.history, self.topics
        admin = cluster.admin()
        registry_url = self.registry.url if self.registry is not None else None
        reads, writes = app.reads or ("input",), app.writes or ("output",)
        return Supervisor(
            spec,
            lambda i: AppContext(
                cluster.client_bootstrap_servers,
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
                topics={topic: topics[topic] for topic in self.incident.topics},
            ),
            history.logs_dir,
            on_event=history.stream("lifecycle"),
            policy=RestartPolicy(
                restart=self.options.restart or app.restart, delay_s=app.restart_delay_s
            ),
            report_dir=history.events_dir,
            ready=members_ready(self.share_watch)
            if self.share_watch is not None
            else lambda members: (
                group_members(admin, group) >= distinct_members(config, members)
                if cluster.lists_group_members
                else group_stable(admin, group)
            ),
            python_path=app_python_path(self.options.client_library),
            name=name,
        )

    def _registered(self, profile: Profile, topics: Mapping[str, str]) -> Profile:
        """The profile whose workloads a schema registry frames: started, their schemas
        registered under ``TOPIC-value`` (each workload's topic), every value behind the
        registry's magic byte and id."""
        schemas = {w.registry_schema for w in profile.workloads.values() if w.registry_schema}
        if not schemas:
            return profile
        from kafka_replay.workload.registry import SchemaRegistry, frame

        self.progress("starting a schema registry")
        self.registry = SchemaRegistry(self.history.logs_dir)
        self.registry.start()
        framed = {}
        for name, workload in profile.workloads.items():
            if workload.registry_schema is not None:
                topic = topics[workload.topic or "input"]
                schema_id = self.registry.register(f"{topic}-value", *workload.registry_schema)
                workload = workload.framed(frame(schema_id, b""))
            framed[name] = workload
        self.history.write_meta(schema_registry=self.registry.url)
        return replace(profile, workloads=framed)

    def _database(self, profile: Profile) -> Database | None:
        """The run's database, its ``[sink]`` tables created, when the profile has a sink."""
        if profile.sink is None:
            return None
        from kafka_replay.sinks.database import redact
        from kafka_replay.sinks.external import ExternalDatabase
        from kafka_replay.sinks.postgres import PostgresServer, postgres_unavailable

        if self.options.database_url:
            self.database = ExternalDatabase(self.options.database_url)
        elif getattr(self.cluster, "backend", None) == "container":  # beside the brokers
            from kafka_replay.sinks.container_postgres import ContainerPostgres

            self.database = ContainerPostgres(self.history.logs_dir, progress=self.progress)
        else:
            reason = postgres_unavailable()
            if reason:
                raise RuntimeError(f"this incident's [sink] needs a PostgreSQL server: {reason}")
            self.database = PostgresServer(self.history.logs_dir)
        self.progress("starting the run's database")
        self.database.start()
        self.database.execute(profile.sink.tables)
        self.history.write_meta(
            database=redact(self.database.url), database_schema=self.database.schema
        )
        return self.database

    def settle(self) -> None:
        """Wait until no open transaction holds an output partition, or record which still do.

        A transaction left open by a killed app holds its partitions' last stable offset until
        its coordinator aborts it, and a read_committed read stops there: read too soon, later
        committed outputs look lost. So the check waits, at most as long as such a transaction
        can last (:func:`~kafka_replay.history.stable_offsets.settle_timeout_s`).
        """
        assert self.cluster is not None
        self._enter("settling")
        outputs = _written(self.incident, self.topics)
        timeout = self.options.settle_timeout_s
        if timeout is None:
            timeout = settle_timeout_s(client_config(self.profile, None), dict(self.profile.broker))
        waited, still_held = settle(self.cluster.admin(), outputs, timeout)
        if waited >= 1.0 or still_held:
            self.progress(f"waited {waited:.0f}s for open transactions to end")
        event: dict[str, Any] = {"kind": "settled", "waited_s": waited, "held": still_held}
        if still_held:
            event["open"] = holders(self.cluster.bootstrap_servers, still_held)
        self.history.stream("transactions").append(event)
        self.outcome.reasons += [_held_reason(row, event.get("open", [])) for row in still_held]

    def check(self, spark: Callable[[], SparkSession]) -> None:
        assert self.cluster is not None
        self._enter("checker")
        from kafka_replay.checker.spark import checked_on

        self.progress("checking every record with Spark")
        session = spark()
        self.history.write_meta(checked_on=checked_on(session))
        self.checked = check_played(session, self._played(), self.outcome)

    def measure_and_judge(self) -> None:
        """The symptoms measured from the run's evidence, then the pass/fail rule
        (:func:`kafka_replay.judging.judge.judge`) over them and the check."""
        assert self.checked is not None
        played = self._played()
        self._enter("symptoms")
        evidence = measure_symptoms(played, self.checked, self.outcome)
        self._enter("judgement")
        apply_rule(played, self.checked, evidence, self.outcome)
        symptoms = self.outcome.symptoms
        if symptoms.get("archived_at_limit"):  # a share group's records the broker gave up on
            self.outcome.reasons.append(archived_reason(symptoms, self.profile.broker))

    def _played(self) -> Played:
        """What the judges of the run are given (:mod:`kafka_replay.judging.played`)."""
        assert self.cluster is not None
        return Played(
            self.cluster, self.history, self.incident, self.profile, self.topics,
            self.guarantee, self.options.output_id, self.options.users_app, self.database,
        )  # fmt: skip

    def finish(self) -> None:
        """Keep the broker logs and the outcome, drop the run's topics; never raises."""
        self._enter("clean-up")
        if self.outcome.failed_stage:
            self.outcome.result = f"{self.outcome.failed_stage} failed"
        if self.share_watch is not None:
            self.share_watch.stop()  # ends its JVM; never raises
        if self.registry is not None:
            self.registry.stop()  # SIGTERM, then SIGKILL: it never raises
        if self.database is not None:
            try:
                self.database.stop()
            except Exception as exc:  # a team's schema kept: said, never hidden
                self.outcome.reasons.append(f"cleaning up the run's database failed: {exc}")
        try:
            if self.cluster is not None:
                self.history.keep_logs(self.cluster.log_files())
                self.cluster.delete_topics(sorted(set(self.topics.values())))
        except Exception as exc:  # a dead broker must not hide the outcome
            self.outcome.reasons.append(f"cleaning up the run's topics failed: {exc}")
        self._enter("done")  # closes clean-up
        self.outcome.duration_s = round(time.monotonic() - self.started, 1)
        written = self.history.root / "outcome.json.tmp"  # whole or absent: a lane's feeder
        written.write_text(json.dumps(self.outcome.to_json(), indent=2, default=str))
        written.replace(self.history.root / "outcome.json")  # reads it as soon as it appears
        self.history.close()


def _written(incident: Incident, topics: Mapping[str, str]) -> list[str]:
    """The topics the app writes, as created: a transaction it leaves open holds them."""
    return [topics[name] for name in incident.topics if incident.role(name) in WRITTEN_ROLES]


def _held_reason(row: Mapping[str, Any], holders: list[dict[str, Any]]) -> str:
    """One partition still held by an open transaction when the output was read, and by whom."""
    said = f"output partition {row['topic']}/{row['partition']} was still held by an open "
    said += f"transaction when the check read it: {row['held']} records past offset {row['lso']}"
    for holder in holders:
        if (holder.get("topic"), holder.get("partition")) == (row["topic"], row["partition"]):
            since = holder.get("started_ms") or holder.get("last_write_ms")
            began = time.strftime("%H:%M:%S", time.localtime(since / 1000)) if since else "?"
            said += (
                f", producer id {holder['producer_id']} (transactional id "
                f"{holder.get('transactional_id') or 'unknown'}), open since {began}"
            )
    return said


def _play(
    incident: Incident,
    profile: Profile,
    cluster: Cluster,
    history: RunHistory,
    topics: dict[str, str],
    reads: Mapping[str, tuple[str, ...]],
    apps: Mapping[str, Supervisor],
    progress: Callable[[str], None],
    share: ShareGroupWatch | None = None,
) -> str | None:
    """Run the steps with the recorders on (each group's commits and lag on what it reads);
    the error that stopped them, if any."""
    recorders = []
    if cluster.has_offsets_topic and share is None:  # else the lag samples give the commits
        recorders = [
            OffsetsRecorder(cluster.bootstrap_servers, group, history.stream("offsets")).start()
            for group in reads
        ]
    lags = (  # a share group's lag comes from its watch (see share_group)
        [
            LagSampler(
                cluster.bootstrap_servers, group, read, history.stream("lag"), LAG_SAMPLE_S
            ).start()
            for group, read in reads.items()
        ]
        if share is None
        else []
    )
    stable = StableOffsetSampler(
        cluster.admin(), _written(incident, topics), history.stream("stable"), LAG_SAMPLE_S
    ).start()
    for supervisor in apps.values():
        supervisor.start(0)  # the instances come from the steps
    group = list(reads)[-1]
    first = next(iter(apps.values()))
    stage = Stage(cluster, history, profile, topics, group, first, random.Random(incident.seed))
    stage.share_watch, stage.services, stage.reads = share, dict(apps), dict(reads)
    try:
        run_steps(stage, incident.steps, progress)
        stage.check()
        return None
    except (StepFailed, AppStartError) as exc:
        return str(exc)
    finally:
        stop_background(stage)
        for supervisor in apps.values():
            supervisor.stop()
        for lag in lags:
            lag.stop()
        if share is not None:  # its last look is in the lag stream before that is read
            share.stop()
        stable.stop()
        for recorder in recorders:
            recorder.stop()
        if not recorders:  # a share group's lag samples hold where the broker is done with them
            for event in commits_from_samples(history.read("lag")):
                history.stream("offsets").append(event)


def _topic_config(profile: Profile, name: str) -> dict[str, str]:
    """A topic's ``[topic_config.NAME]`` as the broker takes it: every value as text."""
    config = profile.topic_config.get(name, {})
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.items()}
