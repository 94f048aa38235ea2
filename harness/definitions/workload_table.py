"""A definition's workload table read into a workload: a built-in generator, a team's
generator, a schema, or recorded traffic; and a ``--payload`` file read into the messages
an incident's workloads carry instead of the built-in JSON.

Every mistake is a :class:`DefinitionError` naming the file and field, raised before any
broker starts: a schema that does not parse, a field that is not in it, a generator that
does not import or take its parameters, a file that is not a capture.
"""

from __future__ import annotations

import itertools
import random
import tomllib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from faker import Faker

from kafka_replay.workload import GENERATORS, Workload
from kafka_replay.workload.connect_json import encode_connect_json
from kafka_replay.workload.fields import TEMPORAL, faker_for
from kafka_replay.workload.payloads import FORMATS, Encoding, Payload, PayloadSource, encode_json

from .model import DefinitionError, toml_error
from .table import Table

SOURCES = ("generator", "schema", "recorded")
#: How a document becomes bytes, by ``format`` (Avro's encoder is its schema's).
ENCODERS = {"json": encode_json, "connect-json": encode_connect_json}
#: The keys of a team's generator that are the harness's, not its parameters.
HARNESS_KEYS = ("generator", "schema", "format", "registry", "key_field", "id_field")


def read_workload(source: Path, where: str, data: Any) -> Workload:
    """The workload a definition's ``[workloads.NAME]`` table describes."""
    return workload_of(Table(source, where, data))


def workload_of(table: Table) -> Workload:
    """The workload a ``[workloads.NAME]`` table read as part of its definition describes (a
    profile's, whose keys are named where they were written)."""
    if not any(key in table.data for key in SOURCES):
        raise table.fail("", f"needs one of {', '.join(SOURCES)}")
    generator = table.get("generator", str, None)
    if generator in GENERATORS:
        return _built_in(table, generator)
    return read_payload(table, endless=False).workload()


def read_payload_file(path: Path) -> PayloadSource:
    """A ``--payload`` file: one workload table whose messages replace the built-in JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(path, "(file)", f"cannot read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(path, *toml_error(text, exc)) from None
    table = Table(path, "(payload)", data)
    if table.get("generator", str, None) in GENERATORS:
        raise table.fail(
            "generator", "a payload is a team's own: module:function, a schema or a capture"
        )
    return read_payload(table, endless=True)


def read_payload(table: Table, endless: bool) -> PayloadSource:
    """A team's messages: from its generator, a schema or a capture (``endless``: a schema
    without a ``count`` makes as many as are asked for)."""
    chosen = [key for key in SOURCES if key in table.data]
    if len(chosen) > 1 and chosen != ["generator", "schema"]:
        raise table.fail(chosen[1], f"give one of {', '.join(SOURCES)}, not {' and '.join(chosen)}")
    seed = table.get("seed", int, 0)
    if "recorded" in table.data:
        return _recorded(table, seed)
    rate = table.number("rate", None, 0, above=True)
    schema = _schema(table)
    encoding = _encoding(table, schema)
    registry = _registry(table, schema)
    if "generator" in table.data:
        return _team(table, seed, rate, encoding, registry)
    return _schema_source(table, schema, seed, rate, encoding, registry, endless)


def _built_in(table: Table, name: str) -> Workload:
    parameters = {k: v for k, v in table.data.items() if k != "generator"}
    for key, value in parameters.items():
        problem = _bad_amount(key, value)
        if problem:
            raise table.fail(key, problem)
    if isinstance(parameters.get("run_length"), list):
        parameters["run_length"] = tuple(parameters["run_length"])
    try:
        return GENERATORS[name](**parameters)
    except TypeError as exc:
        from kafka_replay.workload.team import not_taken

        unknown = not_taken(GENERATORS[name], parameters)
        key, said = unknown if unknown is not None else ("", str(exc))
        raise table.fail(key, f"bad parameters for {name}: {said}") from exc


def _bad_amount(key: str, value: Any) -> str | None:
    """Why a workload's number cannot be used (records, keys, sizes and waits are never
    negative; a rate is more than 0), else None."""
    numbers = value if isinstance(value, list) else [value]
    for number in numbers:
        if isinstance(number, bool) or not isinstance(number, (int, float)) or key == "seed":
            continue
        if key == "rate" and number <= 0:
            return f"must be more than 0 records a second, got {number}"
        if number < 0:
            return f"must be 0 or more, got {number}"
    return None


def _schema(table: Table) -> Any:
    path = table.file("schema")
    if path is None:
        return None
    from kafka_replay.workload.schema_nodes import SchemaError
    from kafka_replay.workload.schema_payloads import load_schema

    try:
        return load_schema(path)
    except SchemaError as exc:
        raise table.fail("schema", f"{path}: {exc}") from None


def _encoding(table: Table, schema: Any) -> Encoding:
    fmt = table.get("format", str, "json")
    if fmt not in FORMATS:
        raise table.fail("format", f"must be one of {', '.join(FORMATS)}")
    if fmt == "avro" and (schema is None or schema.kind != "avro"):
        raise table.fail("format", 'avro needs an Avro schema (schema = "....avsc")')
    samples = {"id_field": str(uuid.UUID(int=0, version=4)), "key_field": None}
    for key, sample in samples.items():  # an event_id is a UUID's text
        path = table.get(key, str, None)
        problem = schema.text_field_problem(path, sample) if path and schema is not None else None
        if problem:
            raise table.fail(key, problem)
    encode = schema.encode_avro if fmt == "avro" else ENCODERS[fmt]
    return Encoding(encode, table.get("id_field", str, None), table.get("key_field", str, None))


def _registry(table: Table, schema: Any) -> tuple[str, str] | None:
    if not table.get("registry", bool, False):
        return None
    if schema is None:
        raise table.fail("registry", 'needs a schema to register (schema = "...")')
    return schema.text, "AVRO" if schema.kind == "avro" else "JSON"


def _team(
    table: Table, seed: int, rate: float | None, encoding: Encoding, registry: Any
) -> PayloadSource:
    from kafka_replay.workload.team import check_parameters, load_generator, team_source

    spec = table.get("generator", str)
    parameters = {k: v for k, v in table.data.items() if k not in HARNESS_KEYS}
    try:
        function = load_generator(spec)
        check_parameters(spec, function, parameters)
    except ValueError as exc:
        raise table.fail("generator", str(exc)) from None
    source = team_source(spec, function, parameters, encoding, seed, rate)
    return replace(source, registry_schema=registry)


def _schema_source(
    table: Table,
    schema: Any,
    seed: int,
    rate: float | None,
    encoding: Encoding,
    registry: Any,
    endless: bool,
) -> PayloadSource:
    from kafka_replay.workload.document_maker import DocumentMaker
    from kafka_replay.workload.key_space import SKEWS, KeySpace

    count = table.number("count", None if endless else 1000, 0)
    keys = table.number("keys", 100, 1)
    skew = table.get("skew", str, "uniform")
    if skew not in SKEWS:
        raise table.fail("skew", f"must be one of {', '.join(SKEWS)}")
    invalid = _invalid(table, seed)
    table.finish()
    key_field = encoding.key_field
    written = [path for path in (encoding.id_field, key_field) if path]
    not_a_document = INVALID_VALUES[schema.kind == "avro"]

    def payloads(rng: random.Random, fake: Faker) -> Iterator[Payload]:
        make = DocumentMaker(schema, fake, rng, present=written)
        kind = faker_for(key_field) if key_field else None
        if kind in TEMPORAL:  # a time from Faker depends on today: keys must not
            kind = None
        space = KeySpace(keys, skew, (lambda n: kind(fake)) if kind else (lambda n: f"key-{n}"))
        is_invalid = invalid()
        for position in itertools.count() if count is None else range(int(count)):
            if is_invalid(position):  # a poison pill: belongs in the dead-letter topic
                yield Payload(not_a_document, space.pick(rng), expect="dead_letter")
            else:
                yield Payload(make(), space.pick(rng))

    name = Path(table.data["schema"]).name
    parameters = {"schema": table.data["schema"], "count": count, "keys": keys, "skew": skew}
    parameters.update({k: table.data[k] for k in ("invalid_at", "invalid_rate") if k in table.data})
    return PayloadSource(name, payloads, encoding, seed, rate, parameters, registry)


#: A value that matches no schema, by whether the schema is Avro: text that is no JSON, and no
#: bytes at all (an Avro record of any field cannot be read from nothing).
INVALID_VALUES = {False: b'{"not json', True: b""}


def _invalid(table: Table, seed: int) -> Callable[[], Callable[[int], bool]]:
    """``invalid_at`` (positions) and ``invalid_rate`` (a share, seeded): which records of a
    schema workload are values that do not match the schema, marked for the dead-letter topic.
    Each replay draws the same ones, apart from the valid documents' own draws."""
    at = table.get("invalid_at", list, [])
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in at):
        raise table.fail("invalid_at", "must be a list of record positions (0 is the first)")
    rate = table.number("invalid_rate", 0.0, 0)
    if rate >= 1:
        raise table.fail("invalid_rate", f"must be less than 1 (a share of records), got {rate}")
    chosen = set(at)

    def start() -> Callable[[int], bool]:
        draws = random.Random(f"{seed}:invalid")
        return lambda position: position in chosen or (rate > 0 and draws.random() < rate)

    return start


def _recorded(table: Table, seed: int) -> PayloadSource:
    from kafka_replay.workload.captured import CaptureError, read_capture, recorded_source

    path = table.file("recorded")
    assert path is not None
    speed = table.number("speed", 1.0, 0, above=True)
    id_field = table.get("id_field", str, None)
    table.finish()
    try:
        read_capture(path)  # every line checked now, not when the run sends it
    except CaptureError as exc:
        raise table.fail("recorded", str(exc)) from None
    return recorded_source(path, speed, seed, id_field)
