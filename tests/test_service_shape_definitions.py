"""Topics by name and ``[expect]`` in a definition: what they read to, and every mistake named
with the file and key before anything starts. Pure logic: no Kafka here (the services
themselves run in ``test_service_shapes.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_replay.apps.contract import AppContext, AppSpec
from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.workload.expect import marked
from kafka_replay.workload.payloads import Payload, PayloadError
from kafka_replay.workload.records import Workload

from .test_catalog_definitions import REMEDIATED, VALID, write

NAMED = VALID.replace(
    "[topics]\ninput = 3\noutput = 3\n",
    """[topics.orders]
partitions = 3
role = "input"

[topics.payments]
partitions = 2
role = "input"

[topics.receipts]
partitions = 3
role = "output"

[topics.orders-dlq]
partitions = 1
role = "dead_letter"
""",
).replace("count = 10\n", 'count = 10\ntopic = "payments"\n')


def test_topics_by_name_keep_their_roles_and_the_short_names(tmp_path: Path) -> None:
    incident = load_incident(write(tmp_path, NAMED))
    assert incident.topics == {"orders": 3, "payments": 2, "receipts": 3, "orders-dlq": 1}
    assert incident.named("input") == ["orders", "payments"]
    names = incident.topic_names()
    assert (names["input"], names["output"], names["dead_letter"]) == (
        "orders", "receipts", "orders-dlq",
    )  # fmt: skip
    assert incident.profiles["vulnerable"].workloads["w"].topic == "payments"
    assert incident.expect.dead_letter == "orders-dlq"  # the dead-letter topic takes bad inputs


def test_a_topic_may_give_its_replication_factor(tmp_path: Path) -> None:
    text = "brokers = 3\n" + NAMED.replace('role = "output"', 'role = "output"\nreplicas = 2')
    incident = load_incident(write(tmp_path, text))
    assert incident.replicas == {"receipts": 2}  # the others: min(3, brokers)


def test_an_expectation_reads_its_predicates_and_fan_out(tmp_path: Path) -> None:
    text = NAMED + (
        '\n[expect]\nbad = "tests.apps.shop:is_payment"\nfiltered = "tests.apps.shop:is_payment"\n'
        '\n[expect.fan_out]\ntopic = "receipts"\nkinds = ["a", "b"]\n'
        'kind_of = "tests.apps.shop:kind_of"\n'
    )
    expect = load_incident(write(tmp_path, text)).expect
    assert expect.predicates == {
        "dead_letter": "tests.apps.shop:is_payment", "filtered": "tests.apps.shop:is_payment",
    }  # fmt: skip
    assert expect.fan_out is not None and expect.fan_out.kinds == ("a", "b")


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        (NAMED.replace('role = "output"', 'role = "sideways"'), "topics.receipts.role", "one of"),
        (NAMED.replace("partitions = 2", "partitions = 0"), "topics.payments.partitions", "1 or"),
        (VALID.replace("output = 3", "results = 3"), "topics.results", "[topics.results]"),
        (VALID.replace("output = 3", "Output = 3"), "topics.Output", "lower-case"),
        (NAMED.replace('topic = "payments"', 'topic = "receipts"'), "workloads.w.topic",
         "not an input topic"),
        (NAMED + '\n[expect]\ndead_letter = "receipts"\n', "expect.dead_letter",
         "not a dead-letter topic"),
        (VALID + '\n[expect]\nbad = "tests.apps.shop:is_payment"\n', "expect.bad",
         "names inputs for a dead-letter topic"),
        (NAMED + '\n[expect]\nfiltered = "tests.apps.nowhere:f"\n', "expect.filtered",
         "cannot import"),
        (NAMED + '\n[expect.fan_out]\ntopic = "orders"\nkinds = ["a"]\nkind_of = "x:y"\n',
         "expect.fan_out.topic", "not an output topic"),
        (NAMED + '\n[expect.fan_out]\nkinds = ["a", "a"]\nkind_of = "tests.apps.shop:kind_of"\n',
         "expect.fan_out.kinds", "twice"),
        (NAMED + '\n[expect.fan_out]\nkinds = ["a"]\nkind_of = "tests.apps.shop:nothing"\n',
         "expect.fan_out.kind_of", "has no"),
        (NAMED.replace('workload = "w"\n', 'workload = "w"\n\n[[steps]]\ndo = "add_partitions"\n'
                       'topic = "refunds"\ncount = 4\n'), "steps[1].topic", "no refunds topic"),

        (NAMED.replace('role = "dead_letter"', 'role = "dead_letter"\nreplicas = 0'),
         "topics.orders-dlq.replicas", "1 or more"),
        (NAMED.replace('role = "dead_letter"', 'role = "dead_letter"\nreplicas = 2'),
         "topics.orders-dlq.replicas", "2 replicas need 2 brokers"),
    ],
)  # fmt: skip
def test_a_shape_mistake_names_the_file_and_key(
    tmp_path: Path, text: str, where: str, says: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert str(path) in str(caught.value)
    assert caught.value.where.startswith(where), caught.value
    assert says in caught.value.problem, caught.value


def test_a_step_names_a_topic_by_its_name_or_its_role(tmp_path: Path) -> None:
    steps = '\n[[steps]]\ndo = "add_partitions"\ntopic = "{}"\ncount = 4\n'
    for name in ("payments", "input", "orders-dlq"):
        text = NAMED.replace("\n[signature]", steps.format(name) + "\n[signature]")
        assert load_incident(write(tmp_path, text)).steps[1]["topic"] == name


def test_the_app_gets_every_topic_by_name() -> None:
    topics = {"orders": "run-orders", "orders-dlq": "run-orders-dlq"}
    context = AppContext("127.0.0.1:9092", "run-orders", "", "g", topics=topics)
    env = context.env()
    assert env["REPLAY_TOPIC_ORDERS"] == "run-orders"
    assert env["REPLAY_TOPIC_ORDERS_DLQ"] == "run-orders-dlq"
    command = AppSpec.parse("svc --in {topic.orders} --dlq {topic.orders-dlq}")
    assert command.command(context, "python") == [
        "svc", "--in", "run-orders", "--dlq", "run-orders-dlq",
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"\{topic.refunds\}: the incident has no such topic"):
        AppSpec.parse("svc {topic.refunds}").command(context, "python")
    assert AppContext.from_env(env).topics == {
        "orders": "run-orders",
        "orders_dlq": "run-orders-dlq",
    }


def _workload(values: list[object]) -> Workload:
    from kafka_replay.workload.payloads import PayloadSource

    return PayloadSource("team", lambda rng, fake: iter(values)).workload()  # type: ignore[arg-type]


def test_a_predicate_marks_the_inputs_it_names_and_a_generators_mark_stays() -> None:
    values = [Payload({"n": 1}), Payload(b"bad", expect="dead_letter"), Payload({"n": 3})]
    workload = marked(_workload(values), "orders", {
        "filtered": ("t:f", lambda record: record.value == b'{"n":3}'),
    })  # fmt: skip
    assert [r.expect for r in workload.records()] == [None, "dead_letter", "filtered"]


def test_a_failing_predicate_names_itself_and_the_record() -> None:
    workload = marked(_workload([Payload({"n": 1})]), "orders", {
        "filtered": ("team.rules:drop", lambda record: 1 / 0),
    })  # fmt: skip
    with pytest.raises(PayloadError, match=r"team.rules:drop failed on record 0 of topic orders"):
        list(workload.records())


def test_a_payload_refuses_a_place_that_does_not_exist() -> None:
    with pytest.raises(ValueError, match="must be one of None, 'dead_letter', 'filtered'"):
        Payload({"n": 1}, expect="trash")


PIPELINE = VALID.replace(
    "[topics]\ninput = 3\noutput = 3\n",
    '[topics]\ninput = 3\noutput = 3\n\n[topics.onboarded]\npartitions = 3\nrole = "internal"\n',
).replace(
    '[app]\ncommand = "{{python}} -m kafka_replay_incidents.apps.batch_forwarder"\n',
    """[apps.billing]
command = "billing"
reads = ["onboarded"]
writes = ["output"]

[apps.onboarding]
command = "onboarding"
reads = ["input"]
writes = ["onboarded"]
""",
)


def test_a_pipelines_services_run_upstream_first(tmp_path: Path) -> None:
    text = PIPELINE + '\n[profiles.remediated.apps.billing.client]\n"max.poll.records" = 100\n'
    incident = load_incident(write(tmp_path, text))
    assert list(incident.profiles["vulnerable"].services) == ["onboarding", "billing"]
    billing = incident.profiles["remediated"].services["billing"]
    assert (billing.reads, billing.writes) == (("onboarded",), ("output",))
    assert billing.client == {"max.poll.records": 100}
    assert incident.profiles["vulnerable"].services["billing"].client == {}


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        (('reads = ["onboarded"]', 'reads = ["input"]'), "apps",
         "no service reads the internal topic 'onboarded'"),
        (('writes = ["onboarded"]', 'writes = ["output"]'), "apps",
         "no service writes the internal topic 'onboarded'"),
        (('reads = ["input"]', 'reads = ["input", "output"]'), "apps",
         "cycle: "),
        (('reads = ["input"]', 'reads = ["refunds"]'), "apps.onboarding.reads",
         "no topic 'refunds'"),
        (('writes = ["output"]\n', ""), "apps.billing.writes", "required"),
        (('[apps.billing]', '[app]\ncommand = "x"\n\n[apps.billing]'), "app",
         "not both"),
        (('do = "produce"\nworkload = "w"', 'do = "stop_instance"\ninstance = 0'), "steps[0].app",
         "name the service it acts on: one of onboarding, billing"),
        (('do = "produce"\nworkload = "w"', 'do = "start_apps"\napp = "payments"'), "steps[0].app",
         "no service 'payments'"),
    ],
)  # fmt: skip
def test_a_pipeline_mistake_names_the_file_and_key(
    tmp_path: Path, change: tuple[str, str], where: str, says: str
) -> None:
    path = write(tmp_path, PIPELINE.replace(*change))
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert caught.value.where.startswith(where), caught.value
    assert says in caught.value.problem, caught.value


@pytest.mark.parametrize(
    ("own", "where", "says"),
    [
        ('[profiles.remediated.apps.billing]\nreads = ["refunds"]\n',
         "profiles.remediated.apps.billing.reads", "no topic 'refunds'"),
        ('[profiles.remediated.apps.billing]\ninstancse = 2\n',
         "profiles.remediated.apps.billing.instancse", "unknown field"),
        ('[profiles.remediated.apps.billing.client]\n"fetch.wait.max.ms" = 5\n',
         "profiles.remediated.apps.billing.client", "unknown client setting"),
        ('[profiles.remediated.apps.refunds]\ncommand = "r"\nreads = ["output"]\nwrites = []\n',
         "profiles.remediated.apps.refunds.writes", "must be a list of the incident's topic"),
    ],
    ids=["unknown-topic", "misspelled-key", "client-setting", "writes-nothing"],
)  # fmt: skip
def test_a_mistake_in_a_profiles_service_is_named_in_its_own_table(
    tmp_path: Path, own: str, where: str, says: str
) -> None:
    """A profile's ``[profiles.NAME.apps.SERVICE]`` is merged over the pipeline's before it is
    read; its mistake is named there, and one in the pipeline's own tables without the profile."""
    path = write(tmp_path, PIPELINE.replace(REMEDIATED, f"{REMEDIATED}\n{own}"))
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert caught.value.where == where, caught.value
    assert says in caught.value.problem, caught.value
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, PIPELINE.replace('reads = ["input"]', 'reads = ["x"]')))
    assert caught.value.where == "apps.onboarding.reads", caught.value


def test_an_internal_topic_needs_a_pipeline(tmp_path: Path) -> None:
    text = VALID.replace(
        "output = 3\n", 'output = 3\n\n[topics.x]\npartitions = 1\nrole = "internal"\n'
    )
    with pytest.raises(
        DefinitionError, match=r"topics\.x: an internal topic is between two services"
    ):
        load_incident(write(tmp_path, text))


def test_an_expect_file_adds_its_topics_and_replaces_the_expectations(tmp_path: Path) -> None:
    from kafka_replay.definitions.shapes import with_expect_file

    incident = load_incident(write(tmp_path, VALID))
    expect = tmp_path / "expect.toml"
    expect.write_text('[topics.dlq]\npartitions = 1\nrole = "dead_letter"\n\n[expect]\n')
    theirs = with_expect_file(incident, expect)
    assert theirs.topics == {"input": 3, "output": 3, "dlq": 1}
    assert theirs.expect.dead_letter == "dlq" and incident.expect.dead_letter is None
    expect.write_text('[topics.output]\npartitions = 1\nrole = "dead_letter"\n')
    with pytest.raises(DefinitionError, match=r"topics\.output: broken has a topic 'output'"):
        with_expect_file(incident, expect)
    expect.write_text("[expect]\ndead_letter = 3\n")
    with pytest.raises(DefinitionError, match=r"expect\.dead_letter: must be"):
        with_expect_file(incident, expect)


def test_a_users_app_takes_a_named_place_or_the_last_one() -> None:
    from kafka_replay.definitions.app_option import placed_app
    from kafka_replay.definitions.model import AppDefinition

    services = {"onboarding": AppDefinition("a"), "billing": AppDefinition("b")}
    assert placed_app("onboarding=./svc --x", services) == ("onboarding", "./svc --x")
    assert placed_app("billing=team/billing:1", services) == ("billing", "team/billing:1")
    for plain in ("./svc --x=1", "python -m svc --opt=1", "env A=B ./svc", "svc.main:run"):
        assert placed_app(plain, services) == ("billing", plain)
    with pytest.raises(ValueError, match="no service biling in x; its services: onboarding, bil"):
        placed_app("biling=./svc", services, "x")
    with pytest.raises(ValueError, match="no service refunds in x, which runs one app"):
        placed_app("refunds=./svc", {"app": AppDefinition("a")}, "x")


def test_a_schema_workload_writes_poison_pills_where_it_is_told(tmp_path: Path) -> None:
    schema = Path(__file__).parents[1] / "docs" / "examples" / "order.schema.json"
    text = VALID.replace(
        'generator = "student_onboarding"\ncount = 10',
        f'schema = "{schema}"\ncount = 40\ninvalid_at = [3, 30]\ninvalid_rate = 0.1',
    )
    workload = load_incident(write(tmp_path, text)).profiles["vulnerable"].workloads["w"]
    records = list(workload.records())
    bad = [n for n, record in enumerate(records) if record.expect == "dead_letter"]
    assert {3, 30} <= set(bad) and len(bad) < 20
    assert all(records[n].value == b'{"not json' for n in bad)
    assert bad == [n for n, r in enumerate(workload.records()) if r.expect]  # the same again
