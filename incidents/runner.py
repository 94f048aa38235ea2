"""Run one incident under one profile: set the stage, play the steps, check every record.

Each run gets its own directory (the run history format of ``docs/history.md`` plus
``check.json`` and ``outcome.json``), its own topics and consumer group, and a cluster with
the profile's broker config. The outcome says whether the post's failure happened
(``reproduced``) and whether the item passed:

- vulnerable profile, reference app: every symptom of the signature was observed;
- remediated profile, reference app: the declared guarantee held and no symptom appeared;
- the user's own app (``app`` option): the declared guarantee held.

In every case the definition's ``conditions`` must hold, or the run did not test what it claims.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from harness.apps import (
    AppContext,
    AppSpec,
    AppStartError,
    RestartPolicy,
    Supervisor,
    load_callable,
)
from harness.checker import CheckResult, KafkaOutput, check_run
from harness.cluster import Cluster
from harness.history import LagSampler, OffsetsRecorder, RunHistory, read_stream

from .definition import Incident, Profile
from .steps import Stage, StepFailed, run_steps, stop_background
from .symptoms import Evidence, Value, measure

GROUP_PROTOCOLS = ("classic", "consumer")
#: Client settings the KIP-848 ``consumer`` protocol moves to the broker.
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")
LAG_SAMPLE_S = 0.5


@dataclass(frozen=True)
class RunOptions:
    """What the person running the catalog chose, over the definition's defaults."""

    app: str | None = None  # the user's app: a command line or module:function
    output_id: str | None = None  # module:function(OutputRecord) -> event_id
    guarantee: str | None = None  # what the user's app declares
    group_protocol: str | None = None  # classic or consumer (KIP-848)


@dataclass
class Outcome:
    incident: str
    profile: str
    app: str
    guarantee: str
    verdict: str
    passed: bool
    reproduced: bool | None
    anomalies: dict[str, int]
    symptoms: dict[str, Value]
    duration_s: float
    run_dir: str
    group_protocol: str = "classic"
    check: str = "unknown"  # the checker's pass, fail or unknown for the guarantee
    reasons: list[str] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def explain(self) -> str:
        lines = [
            f"{self.incident} [{self.profile}] app {self.app}: "
            f"{'PASSED' if self.passed else 'FAILED'} in {self.duration_s:.0f}s",
            f"  verdict {self.verdict} against declared {self.guarantee}: {self.check}",
            f"  reproduced: {self.reproduced}",
            "  symptoms: " + ", ".join(f"{k}={v}" for k, v in self.symptoms.items()),
        ]
        lines += [f"  - {reason}" for reason in self.reasons]
        if self.error:
            lines.append(f"  error: {self.error}")
        lines.append(f"  run directory: {self.run_dir}")
        return "\n".join(lines)


def client_config(profile: Profile, group_protocol: str | None) -> dict[str, Any]:
    """The client properties the app is told to use (``REPLAY_CLIENT_CONFIG``)."""
    config = dict(profile.client)
    if group_protocol == "consumer":
        config = {k: v for k, v in config.items() if k not in CLASSIC_ONLY}
        config["group.protocol"] = "consumer"
    elif group_protocol is not None:
        config["group.protocol"] = group_protocol
    return config


def app_command(profile: Profile, options: RunOptions, topics: Mapping[str, str]) -> AppSpec:
    """The app to run: the user's, or the reference app with its ``{python}`` and topics."""
    if options.app:
        return AppSpec.parse(options.app)
    command = profile.app.command.replace("{python}", sys.executable)
    return AppSpec.parse(command.replace("{side_effects_topic}", topics.get("side_effects", "")))


def app_label(spec: AppSpec) -> str:
    """How reports name the app: the module of a ``python -m`` command, else the spec's name."""
    argv = list(spec.argv)
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1]
    return spec.name


def run_incident(
    incident: Incident,
    profile_name: str,
    *,
    cluster_for: Callable[[Mapping[str, Any]], Cluster],
    spark: Callable[[], SparkSession],
    run_dir: Path,
    options: RunOptions | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Outcome:
    """Replay ``incident`` under ``profile_name`` and judge it.

    ``spark`` gives the checker's session when it is needed (not for a run that failed).
    """
    options = options or RunOptions()
    profile = incident.profiles[profile_name]
    guarantee = options.guarantee or incident.guarantee
    started = time.monotonic()
    history = RunHistory(run_dir)
    cluster = cluster_for(profile.broker)
    topics = {
        role: cluster.create_topic(f"{incident.name}-{role}", partitions)
        for role, partitions in incident.topics.items()
        if partitions
    }
    group = cluster.unique_name(incident.name)
    spec = app_command(profile, options, topics)
    config = client_config(profile, options.group_protocol)
    history.write_meta(
        incident=incident.name,
        profile=profile_name,
        app=app_label(spec),
        app_command=list(spec.argv) or spec.target,
        guarantee=guarantee,
        topics=topics,
        group=group,
        client_config=config,
        broker_config=dict(profile.broker),
        bootstrap_servers=cluster.bootstrap_servers,
        started=time.time(),
    )
    apps = Supervisor(
        spec,
        lambda i: AppContext(
            cluster.bootstrap_servers, topics["input"], topics["output"], group, config, i
        ),
        history.logs_dir,
        on_event=history.stream("lifecycle"),
        policy=RestartPolicy(delay_s=profile.app.restart_delay_s),
        report_dir=history.events_dir,
    )
    error = _play(incident, profile, cluster, history, topics, group, apps, progress)
    check, side_effects = None, None
    if error is None:
        progress("checking every record with Spark")
        check, side_effects = _check(spark(), cluster, history, topics, guarantee, options)
    history.keep_logs(cluster.log_files())
    cluster.delete_topics(list(topics.values()))
    outcome = _judge(
        incident, profile_name, options, guarantee, app_label(spec), history, topics, check,
        side_effects, error, time.monotonic() - started,
    )  # fmt: skip
    (history.root / "outcome.json").write_text(json.dumps(outcome.to_json(), indent=2, default=str))
    history.close()
    return outcome


def _play(
    incident: Incident,
    profile: Profile,
    cluster: Cluster,
    history: RunHistory,
    topics: dict[str, str],
    group: str,
    apps: Supervisor,
    progress: Callable[[str], None],
) -> str | None:
    """Run the steps with the recorders on; the error that stopped them, if any."""
    recorder = OffsetsRecorder(cluster.bootstrap_servers, group, history.stream("offsets")).start()
    lag = LagSampler(
        cluster.bootstrap_servers, group, topics["input"], history.stream("lag"), LAG_SAMPLE_S
    ).start()
    apps.start(0)
    stage = Stage(cluster, history, profile, topics, group, apps, random.Random(incident.seed))
    try:
        run_steps(stage, incident.steps, progress)
        stage.check()
        return None
    except (StepFailed, AppStartError) as exc:
        return str(exc)
    finally:
        stop_background(stage)
        apps.stop()
        lag.stop()
        recorder.stop()


def _check(
    spark: SparkSession,
    cluster: Cluster,
    history: RunHistory,
    topics: dict[str, str],
    guarantee: str,
    options: RunOptions,
) -> tuple[CheckResult, CheckResult | None]:
    extractor = load_callable(options.output_id) if options.output_id else None
    output = KafkaOutput(cluster.bootstrap_servers, topics["output"], extractor)
    check = check_run(spark, history.root, output, guarantee)
    (history.root / "check.json").write_text(json.dumps(check.to_json(), indent=2, default=str))
    side_effects = None
    if "side_effects" in topics:
        side = KafkaOutput(cluster.bootstrap_servers, topics["side_effects"])
        side_effects = check_run(spark, history.root, side, guarantee)
        (history.root / "check-side-effects.json").write_text(
            json.dumps(side_effects.to_json(), indent=2, default=str)
        )
    return check, side_effects


def _judge(
    incident: Incident,
    profile: str,
    options: RunOptions,
    guarantee: str,
    app: str,
    history: RunHistory,
    topics: dict[str, str],
    check: CheckResult | None,
    side_effects: CheckResult | None,
    error: str | None,
    duration: float,
) -> Outcome:
    outcome = Outcome(
        incident=incident.name,
        profile=profile,
        app=app,
        guarantee=guarantee,
        verdict=check.verdict if check else "unknown",
        passed=False,
        reproduced=None,
        anomalies=check.counts if check else {},
        symptoms={},
        duration_s=round(duration, 1),
        run_dir=str(history.root),
        group_protocol=options.group_protocol or "classic",
        check=check.result if check else "unknown",
        error=error,
    )
    if check is None:
        outcome.reasons.append("the run stopped before the checker could look at it")
        return outcome
    evidence = Evidence(
        produce=history.read("produce"),
        lifecycle=history.read("lifecycle"),
        app=sorted(
            (
                e
                for name in history.stream_names()
                if name.startswith("app-")
                for e in read_stream(history.stream_path(name))
            ),
            key=lambda e: e["ts"],
        ),
        offsets=history.read("offsets"),
        lag=history.read("lag"),
        steps=history.read("steps"),
        check=check,
        side_effects=side_effects,
        input_topic=topics["input"],
        client_config=history.meta().get("client_config", {}),
    )
    symptoms = measure(evidence, incident.symptoms)
    outcome.symptoms = symptoms
    shown = [(c, c.holds(symptoms[c.symptom])) for c in incident.signature]
    outcome.reproduced = all(held is True for _, held in shown)
    unmet = [c for c in incident.conditions if c.holds(symptoms[c.symptom]) is False]
    outcome.reasons += [f"condition not met: {c} (measured {symptoms[c.symptom]})" for c in unmet]
    guarantee_held = check.result == "pass"
    if not guarantee_held and (options.app or profile == "remediated"):
        outcome.reasons.append(f"the declared {guarantee} guarantee did not hold ({check.verdict})")
    if options.app:
        outcome.passed = guarantee_held and not unmet
    elif profile == "vulnerable":
        outcome.reasons += [
            f"symptom not observed: {c} (measured {symptoms[c.symptom]})"
            for c, held in shown
            if held is not True
        ]
        outcome.passed = outcome.reproduced and not unmet
    else:
        appeared = [c for c, held in shown if held is True]
        outcome.reasons += [
            f"symptom appeared: {c} (measured {symptoms[c.symptom]})" for c in appeared
        ]
        outcome.passed = guarantee_held and not appeared and not unmet
    return outcome
