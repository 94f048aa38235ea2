"""A team's messages as workload tables and ``--payload`` files: identity stamped around
them, the same records for the same seed, and every mistake named before a broker starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faker import Faker

from kafka_replay.definitions.model import DefinitionError
from kafka_replay.definitions.workload_table import read_payload_file, read_workload
from kafka_replay.workload import EVENT_ID_HEADER, student_onboarding
from kafka_replay.workload.payloads import Payload, PayloadError

SOURCE = Path(__file__)  # where relative paths in the tables below are read from
SCHEMAS = Path(__file__).parent.parent / "docs" / "examples"
TEAM = "tests.apps.order_load:orders"


def failing_at_three(count: int = 10) -> Iterator[dict[str, Any]]:
    for n in range(count):
        if n == 3:
            raise RuntimeError("no price for this product")
        yield {"n": n}


def yielding_numbers() -> Iterator[Any]:
    yield {"n": 0}
    yield 42


def with_payloads(fake: Faker, count: int = 3) -> Iterator[Payload]:
    for n in range(count):
        yield Payload({"n": n}, key=f"k{n}", headers={"source": "shop"}, partition=n % 2)


def test_a_team_generator_keeps_its_payload_and_gets_identity_in_a_header() -> None:
    table = {"generator": TEAM, "count": 30, "seed": 4, "id_field": "order_id",
             "key_field": "customer"}  # fmt: skip
    records = list(read_workload(SOURCE, "workloads.orders", table).records())
    assert len(records) == 30
    for record in records:
        order = json.loads(record.value)
        assert set(order) == {"order_id", "customer", "amount", "currency", "status"}
        assert order["order_id"] == record.event_id  # the id field carries the identity
        assert record.key == order["customer"]  # the key from the named field
        assert dict(record.headers)[EVENT_ID_HEADER] == record.event_id.encode()
    again = list(read_workload(SOURCE, "workloads.orders", table).records())
    assert [(r.key, r.value, r.event_id) for r in again] == [
        (r.key, r.value, r.event_id) for r in records
    ]
    seqs: dict[str, int] = {}
    for record in records:  # seq rises by one per key, as for the built-in generators
        assert record.seq == seqs.get(record.key, 0)
        seqs[record.key] = record.seq + 1


def test_payload_objects_carry_their_key_headers_and_partition() -> None:
    table = {"generator": f"{__name__}:with_payloads"}
    records = list(read_workload(SOURCE, "w", table).records())
    assert [(r.key, r.partition) for r in records] == [("k0", 0), ("k1", 1), ("k2", 0)]
    assert records[0].headers[1:] == [("source", b"shop")]


def test_errors_in_a_team_generator_name_it_and_the_record() -> None:
    workload = read_workload(SOURCE, "w", {"generator": f"{__name__}:failing_at_three"})
    with pytest.raises(PayloadError, match=r"failing_at_three failed at record 3: RuntimeError"):
        list(workload.records())
    workload = read_workload(SOURCE, "w", {"generator": f"{__name__}:yielding_numbers"})
    with pytest.raises(PayloadError, match=r"yielding_numbers record 1: yielded a int"):
        list(workload.records())


@pytest.mark.parametrize(
    ("table", "field", "problem"),
    [
        ({"generator": "nosuch.module:orders"}, "generator", "cannot import 'nosuch.module'"),
        ({"generator": "not_registered"}, "generator", "unknown generator 'not_registered'"),
        ({"generator": TEAM, "shoe_size": 3}, "generator", "does not take these parameters"),
        ({"count": 3}, "w", "needs one of generator, schema, recorded"),
        ({"schema": "missing.avsc"}, "schema", "no such file"),
        ({"generator": TEAM, "recorded": "x.jsonl"}, "recorded", "give one of"),
        ({"generator": TEAM, "format": "xml"}, "format", "must be one of json, avro"),
        ({"generator": TEAM, "format": "avro"}, "format", "avro needs an Avro schema"),
        ({"generator": TEAM, "registry": True}, "registry", "needs a schema"),
        ({"generator": TEAM, "rate": 0}, "rate", "must be more than 0"),
    ],
)
def test_a_bad_workload_table_is_named(table: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(DefinitionError) as error:
        read_workload(SOURCE, "w", table)
    assert error.value.where.endswith(field), error.value
    assert problem in error.value.problem


def test_a_payload_file_puts_a_teams_messages_in_the_catalogs_records(tmp_path: Path) -> None:
    path = tmp_path / "orders.toml"
    path.write_text(f'generator = "{TEAM}"\nid_field = "order_id"\nkey_field = "customer"\n')
    shape = student_onboarding(count=50, students=5, seed=3)
    carried = read_payload_file(path).values_for(shape)
    for mine, theirs in zip(carried.records(), shape.records(), strict=True):
        order = json.loads(mine.value)
        assert (mine.key, mine.event_id, mine.seq) == (theirs.key, theirs.event_id, theirs.seq)
        assert order["order_id"] == mine.event_id and order["customer"] == mine.key
    assert carried.id_field == "order_id" and carried.rate == shape.rate


def test_a_payload_that_runs_out_says_so(tmp_path: Path) -> None:
    path = tmp_path / "few.toml"
    path.write_text(f'generator = "{TEAM}"\ncount = 3\n')
    carried = read_payload_file(path).values_for(student_onboarding(count=10))
    with pytest.raises(PayloadError, match="ran out after 3 records"):
        list(carried.records())


def test_a_payload_file_refuses_a_built_in_generator(tmp_path: Path) -> None:
    path = tmp_path / "builtin.toml"
    path.write_text('generator = "student_onboarding"\n')
    with pytest.raises(DefinitionError, match="a team's own"):
        read_payload_file(path)


@pytest.mark.parametrize("schema", ["order.schema.json", "order.avsc"])
def test_a_schema_workload_makes_the_same_records_for_the_same_seed(schema: str) -> None:
    table = {"schema": str(SCHEMAS / schema), "count": 200, "seed": 9, "keys": 7,
             "skew": "zipf", "id_field": "order_id", "key_field": "customer"}  # fmt: skip
    if schema.endswith(".avsc"):
        table["format"] = "avro"
    first = list(read_workload(SOURCE, "w", table).records())
    second = list(read_workload(SOURCE, "w", table).records())
    assert len(first) == 200
    assert [(r.key, r.value, r.event_id) for r in first] == [
        (r.key, r.value, r.event_id) for r in second
    ]
    assert len({r.key for r in first}) <= 7
    other = list(read_workload(SOURCE, "w", {**table, "seed": 10}).records())
    assert [r.value for r in other] != [r.value for r in first]


def test_avro_values_read_back_with_the_schema_and_carry_identity() -> None:
    import io

    import fastavro

    table = {"schema": str(SCHEMAS / "order.avsc"), "format": "avro", "count": 20,
             "id_field": "order_id", "key_field": "customer"}  # fmt: skip
    parsed = fastavro.parse_schema(json.loads((SCHEMAS / "order.avsc").read_text()))
    for record in read_workload(SOURCE, "w", table).records():
        order = fastavro.schemaless_reader(io.BytesIO(record.value), parsed, parsed)
        assert str(order["order_id"]) == record.event_id and order["customer"] == record.key


@pytest.mark.parametrize(
    ("text", "extra", "field", "problem"),
    [
        (
            '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "money"}]}',
            {},
            "schema",
            "not a valid Avro schema",
        ),
        ("not json", {}, "schema", "schema"),
        (None, {"id_field": "order_ref"}, "id_field", "no field order_ref"),
        (None, {"key_field": "amount"}, "key_field", "amount is"),
        (None, {"skew": "pareto"}, "skew", "must be one of uniform, zipf, hot"),
    ],
)
def test_a_bad_schema_workload_is_named(
    tmp_path: Path, text: str | None, extra: dict[str, Any], field: str, problem: str
) -> None:
    schema = SCHEMAS / "order.avsc"
    if text is not None:
        schema = tmp_path / "broken.avsc"
        schema.write_text(text)
    with pytest.raises(DefinitionError) as error:
        read_workload(SOURCE, "w", {"schema": str(schema), **extra})
    assert error.value.where.endswith(field), error.value
    assert problem in error.value.problem, error.value
