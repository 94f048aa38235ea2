"""What `kafka-replay compare` calls a regression, an improvement or drift (pure logic)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.replay.compare import (
    Comparison,
    compare_reports,
    comparison_json,
    comparison_markdown,
    load_matrix,
    parse_setup,
)
from kafka_replay.replay.settings import RunSettings


def run(profile: str = "remediated", **fields: Any) -> dict[str, Any]:
    base = {
        "incident": "zombie-commit",
        "profile": profile,
        "guarantee": "at-least-once",
        "verdict": "exactly-once",
        "passed": True,
        "reproduced": False,
        "check": "pass",
        "result": "cured",
        "symptoms": {"stale_commits": 0, "drain_s": 10.0},
        "error": None,
        "run_dir": f"/runs/{profile}",
    }
    return {**base, **fields}


def report(*runs: dict[str, Any], app: str | None = None) -> dict[str, Any]:
    return {"options": {"app": app}, "runs": list(runs)}


def kinds(before: dict[str, Any], after: dict[str, Any], app: str | None = None) -> list[str]:
    (item,) = compare_reports(report(before, app=app), report(after, app=app))
    return [change.kind for change in item.changes]


def test_the_same_run_twice_is_the_same() -> None:
    (item,) = compare_reports(report(run()), report(run()))
    assert item.kind == "same" and item.changes == []


def test_a_signature_that_appears_under_the_fix_is_a_regression() -> None:
    after = run(reproduced=True, passed=False, result="not cured", verdict="at-least-once")
    (item,) = compare_reports(report(run()), report(after))
    assert item.kind == "regression"
    assert [c.what for c in item.changes][:2] == [
        "the incident's signature now appears",
        "delivered at-least-once, was exactly-once",
    ]


def test_a_broken_guarantee_and_a_weaker_verdict_are_regressions() -> None:
    after = run(verdict="at-most-once", check="fail", passed=False, result="guarantee broken")
    assert kinds(run(), after) == ["regression", "regression", "regression"]


def test_the_reverse_is_an_improvement() -> None:
    before = run(verdict="at-most-once", check="fail", passed=False, result="guarantee broken")
    assert set(kinds(before, run())) == {"improvement"}


def test_a_reference_replay_that_stops_reproducing_is_an_improvement_not_a_failure() -> None:
    before = run("vulnerable", reproduced=True, result="reproduced")
    after = run("vulnerable", reproduced=False, passed=False, result="not reproduced")
    assert kinds(before, after) == ["improvement"]


def test_your_app_found_vulnerable_is_a_regression() -> None:
    before = run("vulnerable", reproduced=False, result="not vulnerable")
    after = run("vulnerable", reproduced=True, passed=False, result="vulnerable")
    assert kinds(before, after, app="./my-consumer") == ["regression"]


def test_a_run_that_could_not_be_judged_is_a_regression() -> None:
    before = run("vulnerable", reproduced=True, result="reproduced")
    after = run("vulnerable", reproduced=None, passed=False, verdict="unknown", error="broker died")
    assert kinds(before, after)[:2] == ["regression", "regression"]


def test_a_symptom_moves_beyond_its_tolerance_as_drift() -> None:
    after = run(symptoms={"stale_commits": 0, "drain_s": 25.0})
    (item,) = compare_reports(report(run()), report(after))
    assert item.kind == "drift"
    assert item.changes[0].what == "drain_s 10 -> 25 (beyond 50%)"
    tolerant = {"zombie-commit": {"drain_s": 2.0}}
    (item,) = compare_reports(report(run()), report(after), tolerant)
    assert item.kind == "same"


def test_small_counts_do_not_drift_on_noise() -> None:
    assert kinds(run(), run(symptoms={"stale_commits": 0, "drain_s": 11.0})) == []


def test_an_item_on_one_side_only_is_a_regression() -> None:
    (item, missing) = compare_reports(report(run(), run("vulnerable")), report(run()))
    assert item.kind == "same"
    assert missing.kind == "regression" and "candidate" in missing.changes[0].what


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("kafka=3.9.2", ("--kafka-version", "3.9.2")),
        (
            "kafka=4.0.2, protocol=consumer",
            ("--kafka-version", "4.0.2", "--group-protocol", "consumer"),
        ),
        ("client.max.poll.records=500", ("--client-config", "max.poll.records=500")),
        ("broker.group.max.size=3", ("--broker-config", "group.max.size=3")),
        ("bootstrap=127.0.0.1:9092", ("--kafka-bootstrap", "127.0.0.1:9092")),
        ("client=confluent-kafka==2.6.0", ("--client-library", "confluent-kafka==2.6.0")),
        ("client=kafka-clients==3.9.1", ("--client-library", "kafka-clients==3.9.1")),
        ("", ()),
    ],
)
def test_a_setup_becomes_run_options(text: str, options: tuple[str, ...]) -> None:
    assert parse_setup(text).options == options


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("kafka", "not KEY=VALUE"),
        ("version=4.0.2", "unknown key 'version'"),
        ("protocol=kip848", "protocol is one of classic, consumer"),
        ("client.max.poll.record=5", "unknown client setting 'max.poll.record'"),
        ("client.max.poll.records=many", "must be an integer"),
        ("broker.node.id=3", "set by the harness"),
        ("client=kafka-python==2.0", "give confluent-kafka==VERSION"),
        ("backend=nope", "setup item backend=nope: argument --kafka-backend: Kafka backend 'nope'"),
    ],
)
def test_a_bad_setup_is_refused_naming_the_item(text: str, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        parse_setup(text)


@pytest.mark.parametrize(
    ("text", "argv"),
    [
        ("backend=nope", ["--kafka-backend", "nope"]),
        ("protocol=kip848", ["--group-protocol", "kip848"]),
        ("client=kafka-python==2.0", ["--client-library", "kafka-python==2.0"]),
        ("client.max.poll.records=many", ["--client-config", "max.poll.records=many"]),
        ("broker.node.id=3", ["--broker-config", "node.id=3"]),
    ],
    ids=["backend", "protocol", "client", "client-setting", "broker-setting"],
)
def test_a_bad_setup_gets_the_run_options_own_refusal(text: str, argv: list[str]) -> None:
    with pytest.raises(ValueError) as as_option:
        RunSettings().with_argv(argv)
    with pytest.raises(ValueError) as as_setup:
        parse_setup(text)
    assert str(as_setup.value) == f"setup item {text}: {as_option.value}"


def test_a_definition_states_its_drift_tolerances(tmp_path: Path) -> None:
    source = Path("incidents/zombie-commit.toml").read_text()
    path = tmp_path / "zombie-commit.toml"
    path.write_text(source + "\n[drift]\nstale_commits_accepted = 2.0\n")
    assert load_incident(path).drift == {"stale_commits_accepted": 2.0}
    path.write_text(source + "\n[drift]\nno_such = 2.0\n")
    with pytest.raises(DefinitionError, match=r"drift\.no_such"):
        load_incident(path)
    path.write_text(source + "\n[drift]\nstale_commits_accepted = -1\n")
    with pytest.raises(DefinitionError, match="a number of 0 or more"):
        load_incident(path)


def test_a_matrix_makes_every_combination_of_its_axes_a_candidate(tmp_path: Path) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(
        'baseline = "kafka=4.4.0"\nincidents = ["zombie-commit"]\nprofile = "remediated"\n'
        '[axes]\nkafka = ["3.9.2", "4.0.2"]\nprotocol = ["classic", "consumer"]\n'
    )
    matrix = load_matrix(path)
    assert matrix.baseline.kafka == "4.4.0"
    assert [c.label for c in matrix.candidates] == [
        "kafka=3.9.2,protocol=classic",
        "kafka=3.9.2,protocol=consumer",
        "kafka=4.0.2,protocol=classic",
        "kafka=4.0.2,protocol=consumer",
    ]
    assert (matrix.incidents, matrix.profile) == (("zombie-commit",), "remediated")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('baseline = "kafka=4.4.0"\n', r"\[axes\] needs at least one axis"),
        ('[axes]\nkafka = "3.9.2"\n', "axes.kafka must be a list of strings"),
        ('[axes]\nprotocol = ["kip848"]\n', "protocol is one of classic, consumer"),
        ('profile = "both"\n[axes]\nkafka = ["3.9.2"]\n', "profile must be one of"),
        ('incidnets = ["x"]\n[axes]\nkafka = ["3.9.2"]\n', "unknown key"),
        ("[axes\n", "matrix.toml"),
    ],
)
def test_a_bad_matrix_is_refused_naming_the_file(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=named):
        load_matrix(path)


def test_a_matrix_report_has_a_column_per_setup() -> None:
    regressed = run(verdict="at-most-once", check="fail", passed=False)
    comparisons = [
        Comparison(parse_setup(text), f"/out/{text}", compare_reports(report(run()), report(r)))
        for text, r in (("kafka=3.9.2", run()), ("kafka=4.0.2", regressed))
    ]
    markdown = comparison_markdown(parse_setup("kafka=4.4.0"), comparisons)
    assert "| incident | profile | baseline | kafka=3.9.2 | kafka=4.0.2 |" in markdown
    assert (
        "| zombie-commit | remediated | passed (cured), delivered exactly-once | same | "
        "regression |" in markdown
    )
    assert "## kafka=4.0.2: zombie-commit [remediated]" in markdown
    payload = comparison_json(parse_setup("kafka=4.4.0"), "/out/baseline", comparisons)
    assert payload["regressions"] == 1
    assert [c["regressions"] for c in payload["candidates"]] == [0, 1]


def test_a_candidate_whose_brokers_refused_the_apps_client_says_what_they_refused() -> None:
    """An old client on Kafka 4 (KIP-896): the compare names the API versions refused."""
    after = run(check="unknown", passed=False, result="guarantee not judged", verdict="unknown",
                refused_versions={"ListOffsets v0": 9, "Produce v1": 8})  # fmt: skip
    (item,) = compare_reports(report(run()), report(after))
    assert item.kind == "regression"
    assert (
        "the brokers refused the app's client: ListOffsets v0 (9 times), Produce v1 (8 times)"
        in [change.what for change in item.changes]
    )
