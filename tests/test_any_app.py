"""Apps nobody shaped to the harness get the incident's conditions and are judged from outside.

Two apps carry no instrumentation: a plain Java consumer compiled here from source against
the cached kafka-clients jars (``tests/apps/java/PlainApp.java``), and a Python app written
only against the documented contract (``tests/apps/plain.py``). Everything they are judged on
comes from the brokers' logs, the data and the supervisor. CI keeps one real run of each
kind of judgement (slow batches both ways, a crash loop, a silent zombie, a producer's fault);
the rest of the catalog against these apps is the matrix tier (``./dev bench matrix any-app``).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_replay.cluster.artifacts import kafka_classpath
from kafka_replay.report.outcome import Outcome

JAVA_SOURCE = Path(__file__).parent / "apps" / "java" / "PlainApp.java"
PLAIN_PYTHON = Path(__file__).parent / "apps" / "plain.py"

Replay = Callable[..., Outcome]


def compile_java_app(classes: Path, kafka_version: str | None) -> str:
    """``java -cp ... PlainApp``, compiled into ``classes`` against the kafka-clients of the
    broker release chosen from ``kafka_version``."""
    from kafka_replay.cluster import choose_version

    classpath = ":".join(str(jar) for jar in kafka_classpath(choose_version(kafka_version)))
    subprocess.run(
        ["javac", "-cp", classpath, "-d", str(classes), str(JAVA_SOURCE)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return shlex.join(["java", "-Xmx256m", "-cp", f"{classes}:{classpath}", "PlainApp"])


@pytest.fixture(scope="session")
def java_app(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> str:
    """The plain Java app, compiled once against the kafka-clients of the broker in use."""
    return compile_java_app(
        tmp_path_factory.mktemp("java-app"), request.config.getoption("--replay-kafka-version")
    )


def plain_python(*args: str) -> str:
    return shlex.join([sys.executable, str(PLAIN_PYTHON), *args])


def test_a_java_consumer_is_found_vulnerable_to_slow_batches(
    replay_incident: Replay, java_app: str
) -> None:
    outcome = replay_incident(
        "poll-timeout-rebalance", "vulnerable", app=f"{java_app} --work-ms 12",
        guarantee="at-least-once",
    )  # fmt: skip
    print(outcome.explain())
    assert (outcome.passed, outcome.result, outcome.reproduced) == (False, "vulnerable", True)
    symptoms = outcome.symptoms
    assert symptoms["max_poll_exceeded"] >= 1  # the coordinator's log, not the app, says so
    assert symptoms["consumed_offset_jumps_back"] >= 1  # the output shows it
    assert symptoms["reprocessed"] >= 1 and symptoms["backlog_drained"] is False
    assert symptoms["rejected_commits"] is None  # only the app itself could tell
    assert outcome.reasons[0].startswith("your app is vulnerable to this incident: ")


def test_the_setting_that_fixes_slow_batches_reaches_a_java_consumer(
    replay_incident: Replay, java_app: str
) -> None:
    outcome = replay_incident(
        "poll-timeout-rebalance", "remediated", app=f"{java_app} --work-ms 12",
        guarantee="at-least-once",
    )  # fmt: skip
    print(outcome.explain())
    assert (outcome.passed, outcome.result) == (True, "guarantee held"), outcome.explain()
    assert outcome.reproduced is False
    assert outcome.symptoms["max_poll_exceeded"] == 0


@pytest.mark.matrix
@pytest.mark.parametrize("profile", ["vulnerable", "remediated"])
def test_a_java_consumer_under_the_deal_flood(
    replay_incident: Replay, java_app: str, profile: str
) -> None:
    outcome = replay_incident("deal-flood", profile, app=java_app, guarantee="at-least-once")
    print(outcome.explain())
    assert outcome.reproduced is (profile == "vulnerable"), outcome.explain()
    assert outcome.symptoms["hot_arrivals_fetch_wait_apart"] is (profile == "vulnerable")


@pytest.mark.matrix
def test_a_java_exactly_once_app_killed_at_random_is_judged(
    replay_incident: Replay, java_app: str
) -> None:
    outcome = replay_incident(
        "crash-restart-eos", "remediated", app=f"{java_app} --transactional",
        guarantee="exactly-once",
    )  # fmt: skip
    print(outcome.explain())
    assert outcome.passed, outcome.explain()
    assert outcome.symptoms["kills"] >= 5


@pytest.mark.matrix
def test_a_batch_job_that_exits_when_caught_up_is_run_again_and_judged(
    replay_incident: Replay, java_app: str
) -> None:
    """Headers not copied, value unchanged, exit 0 when idle: restarted on a schedule."""
    outcome = replay_incident(
        "crash-restart-eos",
        "remediated",
        app=f"{java_app} --transactional --exit-when-idle-s 2",
        guarantee="exactly-once",
        restart="every:1",
    )
    print(outcome.explain())
    assert outcome.passed, outcome.explain()
    assert (outcome.verdict, outcome.check) == ("exactly-once", "pass")
    assert outcome.symptoms["kills"] >= 5


@pytest.mark.parametrize(
    ("mode", "verdicts"),
    [
        pytest.param(("--commit-first",), {"at-most-once", "lossy"}, marks=pytest.mark.matrix),
        ((), {"at-least-once"}),
    ],
    ids=["commits-then-writes", "writes-then-commits"],
)
def test_an_app_that_keeps_crashing_on_its_own_still_gets_a_verdict(
    replay_incident: Replay, mode: tuple[str, ...], verdicts: set[str]
) -> None:
    outcome = replay_incident(
        "poll-timeout-rebalance", "remediated", app=plain_python(*mode, "--crash-every", "3"),
        guarantee="at-least-once",
    )  # fmt: skip
    print(outcome.explain())
    assert outcome.error is None, outcome.explain()
    assert outcome.verdict in verdicts, outcome.explain()
    assert outcome.symptoms_outside is None  # it reported nothing: everything came from outside
    assert outcome.passed is (outcome.verdict == "at-least-once")


@pytest.mark.matrix
def test_a_java_consumer_after_its_offsets_expired(replay_incident: Replay, java_app: str) -> None:
    # the cure is the brokers' retention, which no app sees: the catalog's item shows it
    outcome = replay_incident(
        "offset-retention-expiry", "vulnerable", app=java_app, guarantee="at-least-once"
    )
    print(outcome.explain())
    assert outcome.reproduced is True, outcome.explain()
    assert outcome.symptoms["restarted_from_log_start"] is True


@pytest.mark.matrix
def test_a_java_consumer_without_transactions_duplicates_when_killed(
    replay_incident: Replay, java_app: str
) -> None:
    # 8 ms of work per record keeps it behind (150 records/s in, 125 a second out), so every
    # kill finds it in the middle of a batch whose first outputs its producer already sent:
    # they are written again after the restart. With 4 ms it could keep up, and six kills that
    # all landed while it waited for records repeated nothing (seen once, on a loaded machine).
    outcome = replay_incident("crash-restart-eos", "vulnerable", app=f"{java_app} --work-ms 8")
    print(outcome.explain())
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()
    assert outcome.verdict == "at-least-once"


@pytest.mark.matrix
def test_a_java_exactly_once_app_that_idles_loses_its_producer_id(
    replay_incident: Replay, java_app: str
) -> None:
    outcome = replay_incident(
        "transactional-id-expiry", "vulnerable", app=f"{java_app} --transactional"
    )
    print(outcome.explain())
    symptoms = outcome.symptoms
    assert symptoms["producer_ids_expired"] >= 1  # the transaction coordinator's log
    assert symptoms["app_restarts"] >= 1  # the supervisor
    assert symptoms["producer_id_errors"] is None and symptoms["side_effect_duplicates"] is None
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()


def test_a_silent_zombie_committer_is_caught_from_the_offsets_log(replay_incident: Replay) -> None:
    """The reference app's bug with its reporting switched off: judged from outside."""
    app = [
        sys.executable,
        "-m",
        "kafka_replay_incidents.apps.periodic_committer",
        "--commit-every-s",
        "1",
    ]
    silent = shlex.join(["env", "-u", "REPLAY_REPORT_FILE", *app, "--work-ms", "50"])
    outcome = replay_incident("zombie-commit", "vulnerable", app=silent)
    print(outcome.explain())
    assert outcome.symptoms["stale_commits_accepted"] is None  # only the app knew its assignment
    assert outcome.symptoms["committed_offset_regressions"] >= 1
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()


# A correct at-least-once service as a team writes it: its own idempotent producer with
# acks=all and Kafka's 120 s delivery timeout, each batch flushed before its offsets commit.
# The incidents whose failure is a producer's put the fault on its output path.
PRODUCER_INCIDENTS = [
    pytest.param(
        "leader-loss-acks-one",
        "--acks 1 --idempotence false",
        "inputs_lost",
        marks=pytest.mark.matrix,
    ),
    pytest.param(
        "paused-leader-send-expiry",
        "--delivery-timeout-ms 3000",
        "inputs_lost",
        marks=pytest.mark.matrix,
    ),
    ("producer-retry-duplicates", "--idempotence false", "output_send_duplicates"),
]


@pytest.mark.parametrize(("incident", "weak", "symptom"), PRODUCER_INCIDENTS)
def test_a_correct_java_service_is_not_blamed_for_the_workload_producer(
    replay_incident: Replay, java_app: str, incident: str, weak: str, symptom: str
) -> None:
    outcome = replay_incident(incident, "vulnerable", app=java_app, guarantee="at-least-once")
    print(outcome.explain())
    assert (outcome.passed, outcome.result) == (True, "not vulnerable"), outcome.explain()
    assert outcome.symptoms[symptom] == 0


# Each fault acts on the app's own writes whatever the machine's load: the paused leader holds
# its sends past their delivery timeout, the proxy loses the answers to its Produce requests,
# and the leader is killed while 20 or more of its writes are on it alone (`./dev bench
# producer-findings` measures each under load).
@pytest.mark.parametrize(("incident", "weak", "symptom"), PRODUCER_INCIDENTS)
def test_the_same_service_with_a_weak_producer_of_its_own_is_found_vulnerable(
    replay_incident: Replay, java_app: str, incident: str, weak: str, symptom: str
) -> None:
    outcome = replay_incident(
        incident, "vulnerable", app=f"{java_app} {weak}", guarantee="at-least-once"
    )
    print(outcome.explain())
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()
    assert outcome.symptoms[symptom] >= 1


def test_a_replay_that_tests_none_of_an_apps_clients_does_not_apply_to_it(
    tmp_path: Path,
) -> None:
    from kafka_replay.definitions.catalog import catalog_dir
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.playing.run_options import RunOptions
    from kafka_replay.playing.runner import run_incident

    source = (catalog_dir() / "producer-retry-duplicates.toml").read_text()
    before, _, after = source.partition("\n[your_app]")
    mine = '\n[your_app]\napplies = false\ntests = "the failure is the workload producer\'s"\n'
    definition = tmp_path / "producer-retry-duplicates.toml"
    definition.write_text(before + mine + after[after.index("\n[profiles.vulnerable]") :])

    def no_cluster(*_: object) -> None:
        raise AssertionError("a run that does not apply starts no cluster")

    outcome = run_incident(
        load_incident(definition),
        "vulnerable",
        cluster_for=no_cluster,  # type: ignore[arg-type]
        spark=no_cluster,  # type: ignore[arg-type]
        run_dir=tmp_path / "run",
        options=RunOptions(app=plain_python(), guarantee="at-least-once"),
    )
    assert (outcome.applicable, outcome.gate, outcome.result) == (False, "n/a", "not applicable")
    assert outcome.reasons == ["not applicable to an app: the failure is the workload producer's"]
