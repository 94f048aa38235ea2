"""Documents made to a team's schema conform to it, look real, and repeat for a seed."""

from __future__ import annotations

import io
import json
import random
import re
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replay.workload.document_maker import DocumentMaker
from kafka_replay.workload.key_space import SKEWS, KeySpace
from kafka_replay.workload.schema_nodes import SchemaError
from kafka_replay.workload.schema_payloads import PayloadSchema, load_schema

STATUSES = ["PLACED", "PAID", "SHIPPED", "CANCELLED"]
AVRO_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "com.example.shop",
    "fields": [
        {"name": "order_id", "type": {"type": "string", "logicalType": "uuid"}},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [
                    {"name": "name", "type": "string"},
                    {"name": "email", "type": "string"},
                    {"name": "phone", "type": ["null", "string"], "default": None},
                ],
            },
        },
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "shipping", "type": "double"},
        {"name": "currency", "type": "string"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": STATUSES}},
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [
                        {"name": "sku", "type": "string"},
                        {"name": "quantity", "type": "int"},
                    ],
                },
            },
        },
        {"name": "tags", "type": {"type": "map", "values": "long"}},
        {"name": "checksum", "type": {"type": "fixed", "name": "Md5", "size": 16}},
    ],
}
JSON_ORDER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Order",
    "type": "object",
    "required": ["order_id", "customer", "amount", "currency", "status", "created_at", "items"],
    "additionalProperties": False,
    "properties": {
        "order_id": {"type": "string", "format": "uuid"},
        "customer": {"$ref": "#/$defs/customer"},
        "amount": {"type": "number", "minimum": 0.5, "maximum": 5000},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "status": {"enum": STATUSES},
        "created_at": {"type": "string", "format": "date-time"},
        "note": {"type": ["string", "null"], "maxLength": 40},
        "reference": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "required": ["sku", "quantity"],
                "additionalProperties": False,
                "properties": {
                    "sku": {"type": "string", "minLength": 5, "maxLength": 12},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
                    "unit_price": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01},
                },
            },
        },
        "payment": {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["card"],
                    "properties": {"card": {"type": "string", "minLength": 12}},
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "required": ["iban"],
                    "properties": {"iban": {"type": "string"}},
                    "additionalProperties": False,
                },
            ]
        },
    },
    "$defs": {
        "customer": {
            "type": "object",
            "required": ["name", "email"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "integer", "minimum": 1},
                "name": {"type": "string", "minLength": 1},
                "email": {"type": "string", "format": "email"},
                "birth_date": {"type": "string", "format": "date"},
            },
        }
    },
}
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]+$")


def _write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return path


@pytest.fixture(scope="module")
def avro(tmp_path_factory: pytest.TempPathFactory) -> PayloadSchema:
    return load_schema(_write(tmp_path_factory.mktemp("avro"), "order.avsc", AVRO_ORDER))


@pytest.fixture(scope="module")
def json_schema(tmp_path_factory: pytest.TempPathFactory) -> PayloadSchema:
    return load_schema(_write(tmp_path_factory.mktemp("json"), "order.json", JSON_ORDER))


def _documents(schema: PayloadSchema, seed: int, count: int) -> list[dict[str, Any]]:
    return list(islice(schema.documents(seed), count))


@pytest.mark.parametrize("kind", ["avro", "json_schema"])
def test_every_document_conforms(kind: str, request: pytest.FixtureRequest) -> None:
    schema: PayloadSchema = request.getfixturevalue(kind)
    for document in _documents(schema, 7, 500):
        schema.validate(document)


@pytest.mark.parametrize("kind", ["avro", "json_schema"])
def test_a_seed_gives_the_same_documents_and_another_seed_others(
    kind: str, request: pytest.FixtureRequest
) -> None:
    schema: PayloadSchema = request.getfixturevalue(kind)
    first = _documents(schema, 3, 50)
    assert first == _documents(schema, 3, 50)
    assert first != _documents(schema, 4, 50)
    assert len({d["order_id"] for d in first}) == 50  # identifiers are never drawn from a pool


def test_the_kind_and_text_are_what_a_registry_is_given(
    avro: PayloadSchema, json_schema: PayloadSchema, tmp_path: Path
) -> None:
    assert (avro.kind, json_schema.kind) == ("avro", "json-schema")
    assert json.loads(avro.text) == AVRO_ORDER
    assert json.loads(json_schema.text) == JSON_ORDER
    # an Avro record in a .json file is still Avro
    assert load_schema(_write(tmp_path, "order.json", AVRO_ORDER)).kind == "avro"


def test_avro_values_look_real_and_keep_to_the_schema(avro: PayloadSchema) -> None:
    documents = _documents(avro, 11, 500)
    for d in documents:
        assert EMAIL.match(d["customer"]["email"]), d["customer"]["email"]
        assert re.fullmatch(r"[A-Z]{3}", d["currency"])
        assert d["status"] in STATUSES
        assert d["amount"].as_tuple().exponent == -2 and 1 <= d["amount"] <= 5000
        assert 1 <= len(d["items"]) <= 3 and all(i["quantity"] >= 1 for i in d["items"])
        assert isinstance(d["checksum"], bytes) and len(d["checksum"]) == 16
        assert datetime(2020, 1, 1, tzinfo=UTC) <= _millis(d["created_at"])
        assert _millis(d["created_at"]) < datetime(2026, 1, 1, tzinfo=UTC)
    phones = [d["customer"]["phone"] for d in documents]
    assert 0 < phones.count(None) < len(phones) / 4  # nullable: mostly present
    assert len({d["status"] for d in documents}) == len(STATUSES)


def test_json_schema_values_look_real_and_keep_to_the_schema(json_schema: PayloadSchema) -> None:
    documents = _documents(json_schema, 5, 500)
    for d in documents:
        assert EMAIL.match(d["customer"]["email"])
        assert re.fullmatch(r"[A-Z]{3}", d["currency"])
        assert d["status"] in STATUSES
        assert 0.5 <= d["amount"] <= 5000 and round(d["amount"], 2) == d["amount"]
        assert datetime.fromisoformat(d["created_at"]).year >= 2020
        assert all(1 <= i["quantity"] <= 99 and 5 <= len(i["sku"]) <= 12 for i in d["items"])
        assert set(d) <= set(JSON_ORDER["properties"])  # additionalProperties: false
        if "reference" in d:
            assert re.fullmatch(r"ORD-\d{6}", d["reference"])
        if "birth_date" in d["customer"]:
            born = date.fromisoformat(d["customer"]["birth_date"])
            assert born < date.fromisoformat(d["created_at"][:10]) - timedelta(days=17 * 365)
    optional = Counter(key for d in documents for key in ("note", "payment") if key in d)
    assert 150 < optional["note"] < 350 and 150 < optional["payment"] < 350
    payments = [next(iter(d["payment"])) for d in documents if "payment" in d]
    assert set(payments) == {"card", "iban"}  # oneOf: either branch, each alone


def test_named_fields_can_be_required_in_every_document(json_schema: PayloadSchema) -> None:
    fake_seed = 9
    from faker import Faker

    fake = Faker()
    fake.seed_instance(fake_seed)
    make = DocumentMaker(json_schema, fake, random.Random(fake_seed), present=["customer.id"])
    for _ in range(100):
        document = make()
        assert document["customer"]["id"] >= 1
        json_schema.validate(document)


def test_avro_documents_decode_back_as_they_were(avro: PayloadSchema) -> None:
    for document in _documents(avro, 2, 100):
        decoded = fastavro.schemaless_reader(io.BytesIO(avro.encode_avro(document)), avro.raw)
        assert str(decoded.pop("order_id")) == document.pop("order_id")
        assert decoded.pop("created_at") == _millis(document.pop("created_at"))
        assert decoded == document


def test_json_encoding_is_compact(json_schema: PayloadSchema, avro: PayloadSchema) -> None:
    document = next(json_schema.documents(1))
    encoded = json_schema.encode_json(document)
    assert json.loads(encoded) == document and b", " not in encoded and b": " not in encoded
    avro_document = next(avro.documents(1))  # decimals and bytes too
    assert json.loads(avro.encode_json(avro_document))["amount"] == str(avro_document["amount"])
    with pytest.raises(SchemaError, match="Avro schema"):
        json_schema.encode_avro(document)


def test_fields_by_path_say_whether_they_hold_text(
    avro: PayloadSchema, json_schema: PayloadSchema
) -> None:
    for schema in (avro, json_schema):
        assert schema.text_field_problem("order_id") is None
        assert schema.text_field_problem("$.customer.email") is None
        info = schema.field("customer.email")
        assert info is not None and info.text and info.path == "customer.email"
        assert schema.field("customer.nope") is None
    unknown = avro.text_field_problem("customer.x")
    assert unknown is not None and unknown.startswith("no field customer.x in the schema")
    assert "customer.email" in unknown
    assert avro.text_field_problem("created_at") == "created_at is long, not a string"
    assert json_schema.text_field_problem("items") == "items is array, not a string"
    assert json_schema.text_field_problem("status") == "status is an enum, not a string"
    assert json_schema.text_field_problem("amount.cents") == "amount is number, it has no fields"
    assert avro.field("customer.phone") == avro.field("customer.phone")
    phone = avro.field("customer.phone")
    assert phone is not None and phone.text and phone.nullable and phone.type == "null|string"
    note = json_schema.field("note")
    assert note is not None and not note.required and note.max_length == 40
    # a sample the harness means to write, checked against the field's own constraints
    assert "has 41" in (json_schema.text_field_problem("note", "x" * 41) or "")
    problem = json_schema.text_field_problem("order_id", "not-a-uuid")
    assert problem is not None and "uuid" in problem
    assert (
        json_schema.text_field_problem("order_id", "0b6ba6f9-8d6e-4c55-a1f3-2a4ea3b3b8b1") is None
    )


UNUSABLE = {
    "gone.avsc": (None, "cannot read it: No such file"),
    "broken.json": ("{not json", "not JSON"),
    "bad.avsc": (
        {"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]},
        "not a valid Avro schema",
    ),
    "top.avsc": ({"type": "enum", "name": "E", "symbols": ["A"]}, "must be a record"),
    "bad.json": ({"type": "object", "properties": {"a": {"type": 5}}}, "not a valid JSON Schema"),
    "list.json": ({"type": "array", "items": {"type": "string"}}, "the top level is array"),
    "ref.json": (
        {"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}},
        "$ref 'other.json#/x' is not within the file",
    ),
    "extra.json": (
        {"type": "object", "required": ["a"], "additionalProperties": False},
        "a is required but not a property",
    ),
    "look.json": (
        {"properties": {"a": {"type": "string", "pattern": "(?=x)y"}}, "required": ["a"]},
        "a: its pattern uses assert",
    ),
    "few.json": (
        {
            "type": "object",
            "required": ["u"],
            "properties": {
                "u": {
                    "type": "array",
                    "minItems": 3,
                    "uniqueItems": True,
                    "items": {"enum": [1, 2]},
                }
            },
        },
        "cannot make documents that conform: u: no 3 distinct items",
    ),
}


@pytest.mark.parametrize("name", list(UNUSABLE))
def test_a_schema_that_cannot_be_used_says_why(tmp_path: Path, name: str) -> None:
    content, reason = UNUSABLE[name]
    path = tmp_path / name if content is None else _write(tmp_path, name, content)
    with pytest.raises(SchemaError, match=re.escape(reason)):
        load_schema(path)


def test_refs_formats_and_composition_are_followed(tmp_path: Path) -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {
            "money": {"type": "integer", "minimum": 100, "maximum": 200, "multipleOf": 5},
            "node": {
                "type": "object",
                "properties": {"label": {"type": "string"}, "next": {"$ref": "#/definitions/node"}},
                "required": ["label"],
            },
        },
        "properties": {
            "price_cents": {"$ref": "#/definitions/money"},
            "host": {"type": "string", "format": "ipv4"},
            "chain": {"$ref": "#/definitions/node"},
            "size": {"allOf": [{"type": "number"}, {"minimum": 2}, {"maximum": 3}]},
            "code": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]},
            "odd": {"type": "integer", "not": {"multipleOf": 2}},
            "coords": {"type": "array", "items": [{"type": "number"}], "additionalItems": False},
            "version": {"const": 2},
        },
        "required": ["price_cents", "host", "chain", "size", "code", "odd", "coords", "version"],
    }
    loaded = load_schema(_write(tmp_path, "misc.json", schema))
    for document in _documents(loaded, 1, 300):
        loaded.validate(document)
        assert document["price_cents"] % 5 == 0 and 2 <= document["size"] <= 3
        assert document["odd"] % 2 == 1 and document["version"] == 2
        assert len(document["coords"]) == 1 and re.fullmatch(r"[\d.]+", document["host"])
    assert loaded.text_field_problem("chain.next.label") is None


def test_avro_recursion_and_unions(tmp_path: Path) -> None:
    schema = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "value", "type": ["int", "string"]},
            {"name": "next", "type": ["null", "Node"], "default": None},
            {"name": "born", "type": {"type": "int", "logicalType": "date"}},
            {"name": "weight", "type": "float"},
        ],
    }
    loaded = load_schema(_write(tmp_path, "node.avsc", schema))
    for document in _documents(loaded, 4, 200):
        loaded.validate(document)
        decoded = fastavro.schemaless_reader(io.BytesIO(loaded.encode_avro(document)), loaded.raw)
        assert decoded["weight"] == document["weight"]  # a float reads back as it was made


def test_a_key_space_picks_with_its_skew() -> None:
    rng = random.Random(1)
    spaces = {skew: KeySpace(20, skew) for skew in SKEWS}
    picks = {skew: Counter(space.pick(rng) for _ in range(5000)) for skew, space in spaces.items()}
    assert picks["hot"]["key-0"] > 0.85 * 5000 and len(picks["hot"]) == 20
    assert picks["zipf"]["key-0"] > 5 * picks["zipf"]["key-19"] > 0
    assert len(picks["uniform"]) == 20
    assert max(picks["uniform"].values()) < 1.5 * min(picks["uniform"].values())


def test_a_key_space_has_distinct_keys_even_from_a_repetitive_make() -> None:
    codes = ["EUR", "USD"]
    space = KeySpace(5, "uniform", lambda n: codes[n % 2])
    assert len(set(space.keys)) == 5 and space.keys[:2] == codes
    with pytest.raises(ValueError, match="skew"):
        KeySpace(5, "spiky")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_any_seed_makes_conforming_documents(seed: int) -> None:
    schema = _cached_json_schema()
    for document in islice(schema.documents(seed), 20):
        schema.validate(document)


_CACHE: dict[str, PayloadSchema] = {}


def _cached_json_schema() -> PayloadSchema:
    if "json" not in _CACHE:
        import tempfile

        with tempfile.TemporaryDirectory() as directory:
            _CACHE["json"] = load_schema(_write(Path(directory), "order.json", JSON_ORDER))
    return _CACHE["json"]


def _millis(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
