"""One run's record: what the run is (its incident, profile, history and what its app
promised), and each resource its start-up started, kept as soon as it exists.

Start-up fills it in; the steps, the settling, the check and the judging each read it whole
(Jepsen's test map is the model: one value every part of a run reads), and :meth:`release`
stops what was started whatever stage the run reached (a failure halfway, Ctrl-C).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_replay.apps import Supervisor
from kafka_replay.cluster import Cluster
from kafka_replay.definitions.model import Incident, Profile
from kafka_replay.history import RunHistory

from .topics import delete_topics

if TYPE_CHECKING:
    from kafka_replay.faults.share_group_admin import ShareGroupWatch
    from kafka_replay.sinks.database import Database
    from kafka_replay.workload.schema_registry import SchemaRegistry

    from .mirror import RunMirror
    from .services import Serving


@dataclass
class RunRecord:
    """A run: what it plays and promises, then what its start-up started."""

    incident: Incident
    profile: Profile
    history: RunHistory
    #: The guarantee the app is judged by (``--guarantee``, else the incident's).
    guarantee: str
    #: ``--output-id``: ``module:function(OutputRecord) -> event_id``.
    output_id: str | None = None
    #: Whether a team's app takes a service's place (``--app``, ``--app-image``).
    users_app: bool = False
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
    #: How the run names its app (a pipeline's services, upstream first), once start-up knows.
    app: str | None = None
    #: Broker settings and feature levels the cluster could not take, each with its need.
    settings_not_applied: dict[str, str] = field(default_factory=dict)

    @property
    def moved_to(self) -> Cluster | None:
        """The cluster a ``fail_over`` moved the apps to (``[mirror]``): its copy of the inputs
        is what they could read at the end."""
        return self.mirror.cluster if self.mirror is not None else None

    @property
    def group(self) -> str:
        """The group whose consumption the run judges: the output's (a pipeline's last)."""
        return list(self.reads)[-1]

    def release(self) -> list[str]:
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
                self.history.keep_logs(self.cluster.log_files())
                delete_topics(self.cluster, self.topics)
        except Exception as exc:  # a dead broker must not hide the outcome
            failed.append(f"cleaning up the run's topics failed: {exc}")
        if self.mirror is not None:
            failed += self.mirror.release()
        return failed
