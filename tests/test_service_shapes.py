"""Services of real shapes, written from the docs alone, judged right on real Kafka and Spark:
one that dead-letters a poison pill into a topic of its own, one that writes two kinds of
result per input, one that joins two input topics.

Each incident of ``tests/shape_incidents`` names its topics (``[topics.NAME]``) and says what
a correct service makes of each input (``[expect]``, or a generator's ``Payload(expect=...)``).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.cluster import choose_version
from kafka_replay.cluster.backends import choose_backend
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.definitions.definition import load_incident
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.runner import run_incident
from kafka_replay.report.outcome import Outcome

SHAPES = Path(__file__).parent / "shape_incidents"

Replay = Callable[..., Outcome]


@pytest.fixture
def replay(kafka_cluster_pool: ClusterPool, spark: SparkSession, tmp_path: Path) -> Replay:
    """``replay(name, profile, app=None)``: one incident of ``tests/shape_incidents``."""
    runs = iter(range(1, 100))

    def run(name: str, profile: str, app: str | None = None, **options: object) -> Outcome:
        outcome = run_incident(
            load_incident(SHAPES / f"{name}.toml"),
            profile,
            cluster_for=kafka_cluster_pool.cluster_for(choose_version(None), choose_backend(None)),
            spark=lambda: spark,
            run_dir=tmp_path / f"run-{next(runs)}",
            options=RunOptions(app=app, **options),  # type: ignore[arg-type]
        )
        print(outcome.explain())
        return outcome

    return run


def service(module: str, *args: str) -> str:
    return shlex.join([sys.executable, "-m", f"tests.apps.{module}", *args])


def test_a_service_that_dies_on_a_poison_pill_is_found_stuck(replay: Replay) -> None:
    outcome = replay("poison-pill", "vulnerable")
    assert (outcome.result, outcome.passed) == ("reproduced", True), outcome.explain()
    assert outcome.symptoms["backlog_drained"] is False and outcome.symptoms["app_restarts"] >= 1
    assert outcome.dead_lettered == 0


def test_a_service_that_dead_letters_the_poison_pill_passes(replay: Replay) -> None:
    outcome = replay("poison-pill", "remediated")
    assert (outcome.result, outcome.passed) == ("cured", True), outcome.explain()
    assert outcome.dead_lettered == 1 and outcome.verdict == "exactly-once"
    assert all(each["anomalies"]["lost"] == 0 for each in outcome.outputs.values())
    assert all(each["anomalies"]["misrouted"] == 0 for each in outcome.outputs.values())
    confirmations, dead_letters = outcome.outputs
    assert "confirmations" in confirmations and "orders-dlq" in dead_letters


def test_a_service_that_skips_the_poison_pill_silently_loses_it(replay: Replay) -> None:
    outcome = replay(
        "poison-pill", "remediated", app=service("checkout", "--on-bad", "skip"),
        guarantee="at-least-once",
    )  # fmt: skip
    assert (outcome.check, outcome.passed) == ("fail", False), outcome.explain()
    assert outcome.dead_lettered == 0
    dead_letters = next(each for name, each in outcome.outputs.items() if "orders-dlq" in name)
    assert dead_letters["anomalies"]["lost"] == 1  # the bad order is in neither place
    assert outcome.anomalies["lost"] == 1


def test_the_catalogs_forwarder_that_skips_a_poison_pill_is_found_losing_it(
    replay_incident: Replay,
) -> None:
    """The catalog's ``poison-pill`` against its own reference app in the second vulnerable
    shape (a default error handler: log, skip, commit past): it never dies, so the crash loop
    is not seen, and the record it dropped is lost in the dead-letter topic's check."""
    skip = shlex.join(
        [sys.executable, "-m", "kafka_replay_incidents.apps.batch_forwarder", "--on-bad", "skip"]
    )
    outcome = replay_incident("poison-pill", "vulnerable", app=skip, guarantee="at-least-once")
    print(outcome.explain())
    assert (outcome.passed, outcome.result) == (False, "guarantee broken"), outcome.explain()
    assert outcome.reproduced is False  # no crash loop: the loss is silent
    assert outcome.symptoms["app_restarts"] == 0 and outcome.symptoms["backlog_drained"] is True
    assert outcome.dead_lettered == 0 and outcome.anomalies["lost"] == 1
    dead_letters = next(each for name, each in outcome.outputs.items() if "dead-letters" in name)
    assert dead_letters["anomalies"]["lost"] == 1  # committed past, in neither place
    output = next(each for name, each in outcome.outputs.items() if "dead-letters" not in name)
    assert output["anomalies"]["lost"] == 0 and output["anomalies"]["misrouted"] == 0


@pytest.mark.matrix  # CI: batch_forwarder dead-letters in poison-pill's catalog items
def test_the_exactly_once_reference_dead_letters_in_its_transaction(
    replay_incident: Replay,
) -> None:
    """The exactly-once reference as ``explore --expect`` gives it a dead-letter topic: the
    poison pill in the dead-letter topic, every other input once, read_committed."""
    eos = shlex.join(
        [sys.executable, "-m", "kafka_replay_incidents.apps.eos_processor", "--on-bad",
         "dead-letter", "--dead-letter-topic", "{topic.dead-letters}"]
    )  # fmt: skip
    outcome = replay_incident("poison-pill", "remediated", app=eos, guarantee="exactly-once")
    assert (outcome.passed, outcome.verdict) == (True, "exactly-once"), outcome.explain()
    assert outcome.dead_lettered == 1 and outcome.anomalies["lost"] == 0


def test_a_service_that_dead_letters_good_orders_misroutes_them(replay: Replay) -> None:
    outcome = replay(
        "poison-pill", "remediated",
        app=service("checkout", "--on-bad", "dead-letter", "--dead-letter-every", "50"),
        guarantee="at-least-once",
    )  # fmt: skip
    assert (outcome.check, outcome.passed) == ("fail", False), outcome.explain()
    confirmations, dead_letters = (outcome.outputs[name] for name in outcome.outputs)
    assert dead_letters["anomalies"]["misrouted"] == 5  # the 50th, 100th, ... good order
    assert confirmations["anomalies"]["lost"] == 0  # misrouted there, not lost here
    assert outcome.dead_lettered == 1


@pytest.mark.parametrize(
    "shape", ["fan-out-kinds", pytest.param("fan-out-topics", marks=pytest.mark.matrix)]
)
def test_a_service_with_two_results_per_input_killed_mid_batch_repeats_each_kind(
    replay: Replay, shape: str
) -> None:
    outcome = replay(shape, "vulnerable")
    assert (outcome.result, outcome.passed) == ("reproduced", True), outcome.explain()
    assert outcome.verdict == "at-least-once", outcome.explain()
    assert len(outcome.outputs) == 2  # each kind judged on its own
    for each in outcome.outputs.values():
        assert each["anomalies"]["lost"] == 0 and each["anomalies"]["unexpected"] == 0
    assert any(each["anomalies"]["duplicate"] for each in outcome.outputs.values())


@pytest.mark.matrix  # CI: fan-out kinds above (repeats per kind), exactly-once in the catalog
def test_a_transactional_service_with_two_results_per_input_is_exactly_once(
    replay: Replay,
) -> None:
    outcome = replay("fan-out-kinds", "remediated")
    assert (outcome.result, outcome.passed) == ("cured", True), outcome.explain()
    kinds = [name.rsplit(" ", 1)[-1] for name in outcome.outputs]
    assert kinds == ["charge", "notification"]
    assert all(each["verdict"] == "exactly-once" for each in outcome.outputs.values())


def test_a_service_that_joins_two_topics_is_judged_on_its_receipts(replay: Replay) -> None:
    outcome = replay("order-payment-join", "remediated")
    assert (outcome.result, outcome.verdict) == ("cured", "exactly-once"), outcome.explain()
    assert outcome.anomalies["unexpected"] == 0 and outcome.anomalies["lost"] == 0
    check = Path(outcome.run_dir) / "check.json"
    assert '"acknowledged": 300' in check.read_text()  # the orders: payments belong nowhere


def test_the_catalog_judges_a_service_that_dead_letters_by_an_expect_file(
    replay_incident: Replay, tmp_path: Path
) -> None:
    """A team's orders with a poison pill, its service and the dead-letter topic it writes:
    ``--payload`` and ``--expect`` bring them to a catalog incident that has none."""
    payload = tmp_path / "orders.toml"
    payload.write_text('generator = "tests.apps.shop:orders"\ncount = 1200\npoison_at = 100\n')
    expect = tmp_path / "expect.toml"
    expect.write_text(
        '[topics.orders-dlq]\npartitions = 1\nrole = "dead_letter"\n\n'
        '[expect]\ndead_letter = "orders-dlq"\n'
    )
    outcome = replay_incident(
        "poll-timeout-rebalance", "remediated", app=service("checkout", "--on-bad", "dead-letter"),
        payload=payload, expect=expect, guarantee="at-least-once",
    )  # fmt: skip
    print(outcome.explain())
    assert (outcome.result, outcome.passed) == ("guarantee held", True), outcome.explain()
    assert outcome.dead_lettered == 1 and len(outcome.outputs) == 2


def test_a_pipeline_names_the_service_where_records_first_went_wrong(
    replay_incident: Replay,
) -> None:
    outcome = replay_incident("poll-timeout-rebalance-chain", "vulnerable")
    print(outcome.explain())
    assert (outcome.result, outcome.passed) == ("reproduced", True), outcome.explain()
    assert list(outcome.hops) == ["onboarding", "billing"]
    assert outcome.hops["onboarding"]["anomalies"]["duplicate"] == 0
    assert outcome.hops["billing"]["anomalies"]["duplicate"] >= 1
    assert outcome.first_wrong_hop == "billing"
    assert "records first went wrong at service billing" in outcome.explain()
    logs = Path(outcome.run_dir) / "logs"
    assert (logs / "app-onboarding-0.log").is_file() and (logs / "app-billing-0.log").is_file()


def test_a_teams_service_takes_one_place_in_a_pipeline(replay_incident: Replay) -> None:
    """``--app billing=...``: a service written from the docs alone replaces the billing
    service; the onboarding service stays the reference one."""
    plain = shlex.join([sys.executable, "tests/apps/plain.py"])
    outcome = replay_incident(
        "poll-timeout-rebalance-chain", "remediated", app=f"billing={plain}",
        guarantee="at-least-once",
    )  # fmt: skip
    print(outcome.explain())
    assert (outcome.result, outcome.passed) == ("guarantee held", True), outcome.explain()
    assert outcome.first_wrong_hop is None and list(outcome.hops) == ["onboarding", "billing"]
    services = json.loads((Path(outcome.run_dir) / "run.json").read_text())["services"]
    assert services["billing"]["command"][-1] == "tests/apps/plain.py"
    assert services["onboarding"]["app"] == "kafka_replay_incidents.apps.batch_forwarder"
