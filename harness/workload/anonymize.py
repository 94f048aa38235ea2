"""Consistent, one-way stand-ins for the values a capture must not keep.

A value at an anonymized JSON path is replaced by a fake chosen by a keyed hash of what it
is: HMAC-SHA256(secret, kind + original) seeds the fake, so one original gives one fake
wherever the same kind of field holds it (joins and keys survive) and without the secret
nobody can tell which original a fake stands for. The kind is what
:func:`kafka_replay.workload.fields.faker_for` makes of the field's name (an e-mail, an
IBAN, ...); a field whose name says nothing keeps its shape instead (a digit string becomes
digits of the same length, other text letters and digits in the same places, a number one of
the same magnitude; booleans and null are kept). Shape-kept text has one kind whatever the
field, so a customer id in a key and the same id in ``$.customer.id`` get the same fake.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import random
import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from faker import Faker

from .fields import NAMES, faker_for

#: A path's steps: a member name, an array index, or every item of an array or object.
WILDCARD = object()
_STEP = re.compile(
    r"\.(?P<name>[^.\[\]]+)"  # .name (.* is every member)
    r"|\[(?P<index>\d+)\]"  # [N]
    r"|\[(?P<all>\*)\]"  # [*]
    r"|\[(?P<q>['\"])(?P<quoted>.*?)(?P=q)\]"  # ['name with spaces']
)
#: Tries at a fake that differs from its original before the kind gives way to the shape.
TRIES = 16
_TEXT = "text"  # the kind of shape-kept text, whatever field holds it
#: How a stand-in is made: ``make(original, seed)``.
Make = Callable[[Any, int], Any]


class PathError(ValueError):
    """A JSON path this module cannot follow."""


@dataclass(frozen=True)
class JsonPath:
    """``$.customer.email``, ``$.items[*].sku``, ``$.lines[0]['unit price']``."""

    text: str
    steps: tuple[Any, ...]
    #: the field's own name: its last member name (``sku`` of ``$.items[*].sku``)
    name: str

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        if not text.startswith("$"):
            raise PathError(f"the JSON path {text!r} must start with $ (like $.customer.email)")
        steps: list[Any] = []
        at = 1
        while at < len(text):
            match = _STEP.match(text, at)
            if match is None:
                raise PathError(
                    f"the JSON path {text!r} cannot be read from {text[at:]!r}: give .name, "
                    "[N], [*] or ['name'] steps (like $.items[*].sku)"
                )
            if match["name"] is not None:
                steps.append(WILDCARD if match["name"] == "*" else match["name"])
            elif match["index"] is not None:
                steps.append(int(match["index"]))
            elif match["all"]:
                steps.append(WILDCARD)
            else:
                steps.append(match["quoted"])
            at = match.end()
        name = next((s for s in reversed(steps) if isinstance(s, str)), "")
        return cls(text, tuple(steps), name)

    def places(self, document: Any) -> Iterator[tuple[Any, Any]]:
        """Every ``(container, key)`` of ``document`` the path reaches (the root's container
        is a one-item list)."""
        level: list[tuple[Any, Any]] = [([document], 0)]
        for step in self.steps:
            following = []
            for container, key in level:
                node = container[key]
                if step is WILDCARD:
                    if isinstance(node, list):
                        following += [(node, k) for k in range(len(node))]
                    elif isinstance(node, dict):
                        following += [(node, k) for k in node]
                elif isinstance(step, int):
                    if isinstance(node, list) and step < len(node):
                        following.append((node, step))
                elif isinstance(node, dict) and step in node:
                    following.append((node, step))
            level = following
        yield from level


class Anonymizer:
    """Replaces what a capture's paths (and maybe its keys) hold; counts what each path found."""

    def __init__(self, paths: Sequence[str], secret: bytes) -> None:
        self.paths = [JsonPath.parse(p) for p in paths]
        #: records in which each path reached something (a path found nowhere is a typo)
        self.found = dict.fromkeys((p.text for p in self.paths), 0)
        self._secret = secret
        self._fake = Faker()
        self._made: dict[tuple[str, type, Any], Any] = {}  # (kind, type, original): the fake
        self._kinds: dict[str, tuple[str, Make]] = {}

    def missing(self) -> list[str]:
        """The paths that reached nothing in any record so far."""
        return [path for path, count in self.found.items() if not count]

    def value(self, raw: bytes | None) -> bytes | None:
        """``raw`` with every path's values replaced; unchanged if it is no JSON or no path
        reaches into it. Replaced documents are written back as compact JSON."""
        if raw is None or not self.paths:
            return raw
        try:
            document = json.loads(raw)
        except ValueError:  # not JSON (or not UTF-8): nothing a JSON path could name
            return raw
        changed = False
        for path in self.paths:
            places = list(path.places(document))
            if places:
                self.found[path.text] += 1
                changed = True
            for container, key in places:
                container[key] = self._replace(container[key], path.name)
        if not changed:
            return raw
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()

    def key(self, raw: bytes | None) -> bytes | None:
        """A record key's stand-in: its text shape-kept (the mapping of a field whose name says
        nothing), other bytes replaced by as many keyed bytes; null stays null."""
        if raw is None:
            return None
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            digest = self._digest("bytes", raw.hex())
            return (digest * (len(raw) // len(digest) + 1))[: len(raw)]
        return str(self._made_for(_TEXT, text, _shape)).encode()

    def _replace(self, value: Any, name: str) -> Any:
        """The stand-in of one JSON value found in the field ``name``."""
        if isinstance(value, dict):
            return {k: self._replace(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._replace(item, name) for item in value]
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return self._made_for("number", value, _number)
        kind, make = self._kind(name)
        made = self._made_for(kind, value, make)
        if made == value:  # a field of few values (a status): its shape at least differs
            made = self._made_for(_TEXT, value, _shape)
        return made

    def _kind(self, name: str) -> tuple[str, Make]:
        """What the field ``name`` holds, and how to make one; found once per name."""
        found = self._kinds.get(name)
        if found is None:
            make = faker_for(name)
            if make is None:
                found = (_TEXT, _shape)
            else:
                # the pattern that named it: fields of one kind share fakes
                kind = next((pattern for pattern, known in NAMES if known is make), name)
                found = (kind, partial(self._faked, make))
            self._kinds[name] = found
        return found

    def _faked(self, make: Callable[[Faker], str], original: Any, seed: int) -> str:
        self._fake.seed_instance(seed)
        return str(make(self._fake))

    def _made_for(self, kind: str, original: Any, make: Make) -> Any:
        """``make(original, seed)`` for the first keyed seed whose result differs from
        ``original``, made once per kind and original."""
        known = (kind, type(original), original)  # 1 and 1.0 are two originals
        made = self._made.get(known)
        if made is not None:
            return made
        seed = int.from_bytes(self._digest(kind, json.dumps(original))[:16])
        for attempt in range(TRIES):
            made = make(original, seed + attempt)
            if made != original:
                break
        self._made[known] = made
        return made

    def _digest(self, kind: str, original: str) -> bytes:
        message = f"{kind}\0{original}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).digest()


def _shape(text: str, seed: int) -> str:
    """Text of the same shape: letters for letters (same case), digits for digits; the rest
    (punctuation, spaces) stays, so text with no letter or digit has nothing to hide and stays.
    A digit string keeps a leading non-zero digit non-zero, so its magnitude holds."""
    rng = random.Random(seed)
    out = []
    for n, char in enumerate(text):
        if char.isdigit():
            low = 1 if n == 0 and char != "0" and text.isdigit() and len(text) > 1 else 0
            out.append(str(rng.randint(low, 9)))
        elif char.isalpha():
            letters = string.ascii_uppercase if char.isupper() else string.ascii_lowercase
            out.append(rng.choice(letters))
        else:
            out.append(char)
    return "".join(out)


def _number(value: float, seed: int) -> float:
    """A number of the same sign and order of magnitude (an int stays an int of as many
    digits; a float keeps its decimals)."""
    rng = random.Random(seed)
    sign = -1 if value < 0 else 1
    if isinstance(value, int):
        digits = len(str(abs(value)))
        return sign * rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1)
    if not math.isfinite(value):
        return value
    exponent = math.floor(math.log10(abs(value))) if value else -1
    made = sign * rng.uniform(10**exponent, 10 ** (exponent + 1))
    text = repr(value)
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text else None
    return round(made, decimals) if decimals is not None else made
