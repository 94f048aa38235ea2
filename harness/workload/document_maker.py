"""Documents made to a read schema: its node tree compiled into closures, realistic and seeded.

Text comes from Faker by what a field's format or name says (:mod:`.fields`), numbers from the
schema's bounds (or, where it gives none, from what the name suggests: ``amount`` looks like
money), text under a ``pattern`` from the pattern itself (:mod:`.pattern_text`), and every time
from a seeded clock, never the wall clock: the same seed gives the same documents on any day.
The tree is compiled once into closures bound to one Faker and one random source, so a
ten-field record costs microseconds.
"""

from __future__ import annotations

import copy
import json
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import date, timedelta
from decimal import Decimal
from math import ceil, floor, inf
from struct import pack, unpack
from typing import Any, Protocol

from faker import Faker

from . import schema_nodes as nodes
from .fields import TEMPORAL, faker_for, uuid_text
from .generators import POOL_SIZE
from .pattern_text import pattern_maker
from .schema_nodes import TOO_DEEP, SchemaError, is_null, path_parts, plain_name

#: An optional JSON Schema property is in a document this often; a nullable value is null this
#: often (mostly present, so an app sees real values, but never always).
OPTIONAL_SHARE, NULL_SHARE = 0.5, 0.1
#: Times start at a seeded instant of 2020-2024 and move on by random gaps under a second.
_EPOCH_FROM, _EPOCH_SPAN = 1_577_836_800, 5 * 365 * 86_400
_DAY_US = 86_400_000_000
#: Tries for a value that must also pass a check (a pattern, ``oneOf``, ``not``...).
_TRIES = 50
#: Past this nesting of a recursive type, unions pick null and optional fields are left out.
_DEEP = 3
_ID_NAME = re.compile(r"(^|[_-])id$|[a-z]Id$")
#: Numbers by name where the schema gives no bounds: (pattern on the plain name, range, decimals).
_RANGES: tuple[tuple[re.Pattern[str], tuple[int, int], int], ...] = tuple(
    (re.compile(pattern), bounds, decimals)
    for pattern, bounds, decimals in (
        (r"cents$|minor$", (100, 500_000), 0),
        (r"amount|price|total|cost|fee|balance|tax|salary|payment|revenue|discount", (1, 5000), 2),
        (r"quantity|qty|count$|units$", (1, 20), 0),
        (r"age$", (18, 90), 0),
        (r"year$", (1990, 2030), 0),
        (r"latitude|^lat$", (-90, 90), 6),
        (r"longitude|^lon$|^lng$", (-180, 180), 6),
        (r"rating|score|stars", (1, 5), 1),
        (r"percent|pct", (0, 100), 2),
    )
)
_DEFAULT_RANGE = ((0, 10_000), 2)


class DocumentSchema(Protocol):
    """What a document maker needs of a read schema (a
    :class:`~.schema_payloads.PayloadSchema` is one): its node tree, and a check of a value
    against a part of the schema, for the nodes the tree cannot model exactly."""

    @property
    def root(self) -> Any: ...

    def check(self, schema: dict[str, Any]) -> Callable[[Any], bool]: ...


class _Clock:
    """Event times: a seeded instant of 2020-2024, moving on by random gaps under a second."""

    def __init__(self, rng: random.Random) -> None:
        self._random, self._randrange = rng.random, rng.randrange
        self.us = (_EPOCH_FROM + rng.randrange(_EPOCH_SPAN)) * 1_000_000
        self._second, self._text = -1, ""

    def tick(self) -> int:
        self.us += int(self._random() * 1_000_000)
        return self.us

    def date_time(self) -> str:
        second, micro = divmod(self.tick(), 1_000_000)
        if second != self._second:
            self._second = second
            self._text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._text}.{micro // 1000:03d}Z"

    def date(self, birthday: bool = False) -> str:
        days = self.tick() // _DAY_US - (self._randrange(18 * 365, 80 * 365) if birthday else 0)
        return (date(1970, 1, 1) + timedelta(days=days)).isoformat()

    def time(self) -> str:
        return time.strftime("%H:%M:%SZ", time.gmtime(self.tick() // 1_000_000))


def _span(name: str, lo: float | None, hi: float | None) -> tuple[float, float, int]:
    """Where to draw a number from: the schema's bounds, filled in by what the name suggests."""
    plain = plain_name(name)
    (dlo, dhi), decimals = next(
        ((bounds, places) for pattern, bounds, places in _RANGES if pattern.search(plain)),
        _DEFAULT_RANGE,
    )
    width = dhi - dlo
    if lo is None:
        lo = dlo if hi is None or dlo < hi else hi - width
    if hi is None:
        hi = dhi if dhi > lo else lo + width
    return lo, hi, decimals


def _fits_multiple(value: float, multiple: float) -> bool:
    """jsonschema's own test of ``multipleOf`` for a float."""
    if isinstance(multiple, float):
        quotient = value / multiple
        return int(quotient) == quotient
    return value % multiple == 0


class DocumentMaker:
    """Documents to one schema, drawn from one seeded Faker and one seeded random source.

    ``present`` names fields (dotted paths) that are in every document, optional or nullable
    or not: where the harness writes an event id, the field and its parents must exist.
    """

    def __init__(
        self,
        schema: DocumentSchema,
        fake: Faker,
        rng: random.Random,
        present: Iterable[str] = (),
    ) -> None:
        self.schema, self._fake, self._rng = schema, fake, rng
        self._clock = _Clock(rng)
        self._words = list(fake.get_words_list())
        self._present = {".".join(path_parts(p)[:n]) for p in present for n in range(1, 99)}
        self._depth = 0
        self._make = self._compile(schema.root, "")

    def __call__(self) -> dict[str, Any]:
        return self._make()

    def _compile(self, node: Any, path: str) -> Callable[[], Any]:
        compile_kind = {
            nodes.Text: self._text,
            nodes.Int: self._int,
            nodes.Number: self._number,
            nodes.Decimal: self._decimal,
            nodes.Bytes: self._bytes,
            nodes.Const: self._const,
            nodes.Object: self._object,
            nodes.Array: self._array,
            nodes.Map: self._map,
            nodes.Union: self._union,
            nodes.Checked: self._checked,
            nodes.Ref: self._ref,
        }[type(node)]
        return compile_kind(node, path)

    # text

    def _text(self, node: nodes.Text, path: str) -> Callable[[], str]:
        make = self._text_source(node)
        lo, hi, pattern = node.lo, node.hi, node.pattern
        if not (lo or hi is not None or pattern):
            return make
        longest = inf if hi is None else hi
        if lo > longest:
            raise SchemaError(f"{path}: at least {lo} characters but at most {hi}")
        matches = re.compile(pattern).search if pattern else None
        try:
            from_pattern = pattern_maker(pattern) if pattern else None
        except SchemaError as exc:
            raise SchemaError(f"{path}: {exc}") from None
        rng, words = self._rng, self._words

        def fitted() -> str:
            value = make()
            if len(value) > longest:
                value = value[:hi].rstrip() or value[:hi]
            while len(value) < lo:
                value = f"{value} {rng.choice(words)}".lstrip()[:hi]
            if matches is None or matches(value):
                return value
            for _ in range(_TRIES):
                value = from_pattern(rng)  # type: ignore[misc]
                if lo <= len(value) <= longest and matches(value):
                    return value
            raise SchemaError(f"{path}: no text of {lo}..{hi} characters matching {pattern!r}")

        return fitted

    def _text_source(self, node: nodes.Text) -> Callable[[], str]:
        """Where a string comes from: the seeded clock, a fresh UUID, Faker, or plain words."""
        make = faker_for(node.name, node.fmt)
        fmt = node.fmt if node.fmt in ("date-time", "date", "time") else TEMPORAL.get(make)  # type: ignore[arg-type]
        clock = self._clock
        if fmt == "date-time":
            return clock.date_time
        if fmt == "time":
            return clock.time
        if fmt == "date":
            birthday = bool(re.search(r"dob|birth", plain_name(node.name)))
            return lambda: clock.date(birthday)
        if make is uuid_text or (make is None and _ID_NAME.search(node.name)):
            bits = self._rng.getrandbits
            return lambda: str(uuid.UUID(int=bits(128), version=4))
        if make is None:  # an unknown format is an annotation: words pass the schema
            rng, words = self._rng, self._words
            return lambda: " ".join(rng.choices(words, k=rng.randint(1, 3)))
        return self._pooled(make)

    def _pooled(self, make: Callable[[Faker], str]) -> Callable[[], str]:
        """Faker's values, the first POOL_SIZE made fresh and then drawn again (Faker's e-mails
        cost ~80us each, a draw from the pool well under 1us)."""
        pool: list[str] = []
        fake, choice = self._fake, self._rng.choice

        def pooled() -> str:
            if len(pool) < POOL_SIZE:
                pool.append(make(fake))
                return pool[-1]
            return choice(pool)

        return pooled

    # numbers

    def _temporal_number(self, name: str, bits: int) -> Callable[[], int] | None:
        """A number a time-like name (``created_at``) implies: epoch milliseconds (seconds in an
        Avro ``int``, days for a date), None for other names (``lat`` is a latitude)."""
        if any(pattern.search(plain_name(name)) for pattern, _, _ in _RANGES):
            return None
        kind = TEMPORAL.get(faker_for(name))  # type: ignore[arg-type]
        tick = self._clock.tick
        if kind == "date":
            return lambda: tick() // _DAY_US
        if kind:
            unit = 1_000_000 if bits == 32 else 1000
            return lambda: tick() // unit
        return None

    def _int(self, node: nodes.Int, path: str) -> Callable[[], int]:
        tick = self._clock.tick
        logical = {
            "timestamp-millis": lambda: tick() // 1000,
            "local-timestamp-millis": lambda: tick() // 1000,
            "timestamp-micros": tick,
            "local-timestamp-micros": tick,
            "date": lambda: tick() // _DAY_US,
            "time-millis": lambda: tick() // 1000 % 86_400_000,
            "time-micros": lambda: tick() % _DAY_US,
        }.get(node.logical or "")
        if logical:
            return logical
        if node.lo is None and node.hi is None and not node.multiple:
            temporal = self._temporal_number(node.name, node.bits)
            if temporal:
                return temporal
        lo, hi, _ = _span(node.name, node.lo, node.hi)
        step = node.multiple or 1
        k_lo, k_hi = ceil(lo / step), floor(hi / step)
        if k_lo > k_hi:
            raise SchemaError(f"{path}: no multiple of {step} between {lo} and {hi}")
        randint = self._rng.randint
        if step == 1:
            return lambda: randint(k_lo, k_hi)
        return lambda: randint(k_lo, k_hi) * step

    def _number(self, node: nodes.Number, path: str) -> Callable[[], float]:
        if node.lo is None and node.hi is None and not node.multiple:
            temporal = self._temporal_number(node.name, 64)
            if temporal:
                return lambda: temporal() / 1000
        lo, hi, decimals = _span(node.name, node.lo, node.hi)
        while decimals < 12 and 10 ** (1 - decimals) > hi - lo:  # a narrow range: finer steps
            decimals += 1
        rng, lo_open, hi_open, multiple = self._rng, node.lo_open, node.hi_open, node.multiple
        float32 = node.float32
        if multiple:
            places = max(decimals, -Decimal(str(multiple)).as_tuple().exponent)  # type: ignore[operator]
            k_lo, k_hi = ceil(lo / multiple), floor(hi / multiple)
            if k_lo > k_hi:
                raise SchemaError(f"{path}: no multiple of {multiple} between {lo} and {hi}")

        def number() -> float:
            for _ in range(_TRIES):
                if multiple:
                    value = round(rng.randint(k_lo, k_hi) * multiple, places)
                else:
                    value = round(rng.uniform(lo, hi), decimals)
                if float32:  # Avro's float: a value that reads back as it was written
                    value = unpack("<f", pack("<f", value))[0]
                if (
                    (lo < value or (value == lo and not lo_open))
                    and (value < hi or (value == hi and not hi_open))
                    and (not multiple or _fits_multiple(value, multiple))
                ):
                    return value
            raise SchemaError(f"{path}: no number between {lo} and {hi} in {_TRIES} tries")

        return number

    def _decimal(self, node: nodes.Decimal, path: str) -> Callable[[], Decimal]:
        lo, hi, _ = _span(node.name, None, None)
        most = 10**node.precision - 1
        if node.size:  # a fixed holds a signed integer of its bytes
            most = min(most, 2 ** (8 * node.size - 1) - 1)
        unit = 10**node.scale
        k_lo, k_hi = min(int(lo * unit), most), min(int(hi * unit), most)
        randint, scale = self._rng.randint, -node.scale
        return lambda: Decimal(randint(k_lo, k_hi)).scaleb(scale)

    def _bytes(self, node: nodes.Bytes, path: str) -> Callable[[], bytes]:
        rng, size = self._rng, node.size
        if size is not None:
            return lambda: rng.randbytes(size)
        return lambda: rng.randbytes(rng.randint(8, 32))

    # choices and structure

    def _const(self, node: nodes.Const, path: str) -> Callable[[], Any]:
        values = node.values
        if values == (True, False):
            random_ = self._rng.random
            return lambda: random_() < 0.5
        if any(isinstance(v, (dict, list)) for v in values):
            choice = self._rng.choice
            return lambda: copy.deepcopy(choice(values))
        if len(values) == 1:
            return lambda: values[0]
        choice = self._rng.choice
        return lambda: choice(values)

    def _object(self, node: nodes.Object, path: str) -> Callable[[], dict[str, Any]]:
        prefix = f"{path}." if path else ""
        parts = [
            (name, self._compile(child, prefix + name), required or prefix + name in self._present)
            for name, (child, required) in node.fields.items()
        ]
        random_, least = self._rng.random, node.min_props

        def make() -> dict[str, Any]:
            document: dict[str, Any] = {}
            shallow = self._depth < _DEEP
            for name, value, always in parts:
                if always or (shallow and random_() < OPTIONAL_SHARE):
                    document[name] = value()
            if len(document) < least:
                for name, value, _ in parts:
                    if len(document) < least and name not in document:
                        document[name] = value()
            return document

        return make

    def _array(self, node: nodes.Array, path: str) -> Callable[[], list[Any]]:
        item = self._compile(node.item, f"{path}[]") if node.item is not None else None
        prefix = [self._compile(p, f"{path}[]") for p in node.prefix]
        lo, hi, unique, randint = node.lo, node.hi, node.unique, self._rng.randint

        def make() -> list[Any]:
            count = randint(lo, hi) if self._depth < _DEEP else lo
            values: list[Any] = []
            seen: set[str] = set()
            for _ in range(count * _TRIES if unique else count):
                if len(values) == count:
                    break
                position = len(values)
                value = prefix[position]() if position < len(prefix) else item()  # type: ignore[misc]
                if unique:
                    marker = json.dumps(value, sort_keys=True, default=repr)
                    if marker in seen:
                        continue
                    seen.add(marker)
                values.append(value)
            if len(values) < lo:
                raise SchemaError(f"{path}: no {lo} distinct items in {count * _TRIES} tries")
            return values

        return make

    def _map(self, node: nodes.Map, path: str) -> Callable[[], dict[str, Any]]:
        value, rng, words = self._compile(node.value, f"{path}{{}}"), self._rng, self._words
        return lambda: {rng.choice(words): value() for _ in range(rng.randint(1, 3))}

    def _union(self, node: nodes.Union, path: str) -> Callable[[], Any]:
        branches = [self._compile(b, path) for b in node.branches if not is_null(b)]
        nullable = len(branches) < len(node.branches) and path not in self._present
        if not branches:
            return lambda: None
        random_, choice = self._rng.random, self._rng.choice
        only = branches[0] if len(branches) == 1 else None
        if not nullable:
            return only or (lambda: choice(branches)())

        def make() -> Any:
            if self._depth >= _DEEP or random_() < NULL_SHARE:
                return None
            return only() if only else choice(branches)()

        return make

    def _checked(self, node: nodes.Checked, path: str) -> Callable[[], Any]:
        inner, valid = self._compile(node.inner, path), self.schema.check(node.schema)

        def make() -> Any:
            for _ in range(_TRIES):
                value = inner()
                if valid(value):
                    return value
            raise SchemaError(f"{path or 'the document'}: no value that conforms in {_TRIES} tries")

        return make

    def _ref(self, node: nodes.Ref, path: str) -> Callable[[], Any]:
        made: list[Callable[[], Any]] = []

        def make() -> Any:
            if not made:  # compiled on first use: a recursive type compiles one level at a time
                made.append(self._compile(node.table[node.key], path))
            self._depth += 1
            try:
                if self._depth > TOO_DEEP:
                    raise SchemaError(f"{node.key} contains itself with no way to stop")
                return made[0]()
            finally:
                self._depth -= 1

        return make
