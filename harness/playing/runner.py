"""Run one incident under one profile: start it up, play the steps, check every record.

Each run gets its own directory (the run history format of ``docs/history.md`` plus
``check.json`` and ``outcome.json``), its own topics and consumer group, and a cluster with
the profile's broker config. A run is composed of parts, each owning one resource or phase:
start-up (:mod:`.start_up`: cluster, topics, registry, database, apps), the steps with the
recorders on (:mod:`.recording`), settling (:mod:`.settling`), then checking and judging
(:mod:`kafka_replay.judging.played`). Whatever stage fails, the run still ends with an outcome
naming that stage and its error, and the history kept so far.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_replay.cluster import Cluster, ClusterFor
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.definitions.model import Incident
from kafka_replay.history import RunHistory
from kafka_replay.interrupts import interrupted
from kafka_replay.judging.played import Checked, apply_rule, check_played, measure_symptoms
from kafka_replay.report.outcome import Outcome

from .recording import play_steps
from .run_options import RunOptions
from .run_record import RunRecord
from .settling import settle_outputs, written
from .start_up import start_up

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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

    ``cluster_for(needs)`` gives the cluster (:class:`~kafka_replay.cluster.ClusterNeeds`);
    ``spark`` gives the checker's session when it is needed (not for a run that failed).
    """
    played = play_incident(
        incident,
        profile_name,
        cluster_for=cluster_for,
        run_dir=run_dir,
        options=options,
        progress=progress,
    )
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
        incident_played = incident.for_your_app() if options.users_app else incident
        profile = options.apply(incident_played.profiles[profile_name])
        guarantee = options.guarantee or incident.guarantee
        self.run = RunRecord(
            incident_played, profile, history, guarantee, options.output_id, options.users_app
        )
        self.progress = progress
        self.started_s = self.stage_started = time.monotonic()
        self.stage = "start-up"
        self.checked: Checked | None = None  # what the symptoms read, the place the gate takes
        self.stopped = False  # a stage failed, or the run does not apply: nothing more to do
        if options.settings:
            history.write_meta(settings=dict(options.settings))
        self.outcome = Outcome(
            incident=incident.name,
            profile=profile_name,
            app=str(options.app_image or options.app or profile.app.command),
            guarantee=guarantee,
            verdict="unknown",
            passed=False,
            reproduced=None,
            anomalies={},
            symptoms={},
            duration_s=0.0,
            run_dir=str(history.root),
            group_protocol=options.group_protocol or "classic",
        )

    @property
    def cluster(self) -> Cluster | None:
        """The cluster the run plays on, once start-up has it."""
        return self.run.cluster

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
        """Start the run up, then play its steps with the recorders on."""
        start_up(self.run, self.options, cluster_for, self.progress)
        self._enter("steps")
        play_steps(self.run, self.progress)
        self._enter("queued")  # until a lane's check of the run before is done

    def settle(self) -> None:
        """Wait until no open transaction holds an output partition, or record which still do
        (:mod:`.settling`)."""
        run = self.run
        assert run.cluster is not None
        self._enter("settling")
        profile = run.profile
        self.outcome.reasons += settle_outputs(
            run.cluster,
            written(run.incident, run.topics),
            self.history,
            self.options.settle_timeout_s,
            (profile.client, profile.broker),
            self.progress,
        )

    def check(self, spark: Callable[[], SparkSession]) -> None:
        assert self.cluster is not None
        self._enter("checker")
        self.progress("checking every record with Spark")
        self.checked = check_played(spark(), self.run)
        self.checked.into(self.outcome)

    def measure_and_judge(self) -> None:
        """The symptoms measured from the run's evidence, then the pass/fail rule
        (:func:`kafka_replay.judging.judge.judge`) over them and the check."""
        assert self.checked is not None
        self._enter("symptoms")
        measured = measure_symptoms(self.run, self.checked)
        self._enter("judgement")
        apply_rule(self.run, self.checked, measured, self.outcome.profile).into(self.outcome)

    def finish(self) -> None:
        """Keep the broker logs and the outcome, drop the run's topics; never raises."""
        self._enter("clean-up")
        if self.outcome.failed_stage:
            self.outcome.result = f"{self.outcome.failed_stage} failed"
        self.outcome.app = self.run.app or self.outcome.app
        self.outcome.settings_not_applied = self.run.settings_not_applied
        self.outcome.reasons += self.run.release()
        self._enter("done")  # closes clean-up
        self.outcome.duration_s = round(time.monotonic() - self.started_s, 1)
        whole = self.history.root / "outcome.json.tmp"  # whole or absent: a lane's feeder
        whole.write_text(json.dumps(self.outcome.to_json(), indent=2, default=str))
        whole.replace(self.history.root / "outcome.json")  # reads it as soon as it appears
        self.history.close()
