"""Text that matches a regular expression, made from the pattern's own parse tree.

A JSON Schema ``pattern`` (``^[A-Z]{3}-[0-9]{4}$``) rarely matches what Faker writes for the
field's name; the document maker then draws text from the pattern itself: literals, classes,
bounded repeats, groups and alternatives. Lookarounds and back-references are refused at load.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Iterable
from re import _constants as sre  # the parse tree of a pattern, to make text that matches it
from re import _parser as sre_parse
from typing import Any

from .schema_nodes import SchemaError

_Emit = Callable[[random.Random, list[str]], None]
_CATEGORY_CHARS = {
    sre.CATEGORY_DIGIT: string.digits,
    sre.CATEGORY_NOT_DIGIT: string.ascii_letters,
    sre.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    sre.CATEGORY_NOT_WORD: " -.,",
    sre.CATEGORY_SPACE: " ",
    sre.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
}
_ANY_CHARS = string.ascii_letters + string.digits


def _class_chars(items: list[tuple[Any, Any]]) -> str:
    """The characters a ``[...]`` class allows (ASCII where it is negated or wide)."""
    chars: set[str] = set()
    negate = False
    for op, value in items:
        if op == sre.NEGATE:
            negate = True
        elif op == sre.LITERAL:
            chars.add(chr(value))
        elif op == sre.RANGE:
            chars.update(chr(c) for c in range(value[0], min(value[1], value[0] + 255) + 1))
        elif op == sre.CATEGORY:
            chars.update(_CATEGORY_CHARS.get(value, ""))
    if negate:
        chars = set(string.ascii_letters + string.digits + " -_.") - chars
    return "".join(sorted(chars))


def _emitter(items: Iterable[tuple[Any, Any]]) -> _Emit:
    parts = [_emit_one(op, value) for op, value in items]

    def emit(rng: random.Random, out: list[str]) -> None:
        for part in parts:
            part(rng, out)

    return emit


def _choose(chars: str) -> _Emit:
    if not chars:
        raise SchemaError("a character class that allows nothing")
    return lambda rng, out: out.append(rng.choice(chars))


def _emit_one(op: Any, value: Any) -> _Emit:
    if op == sre.LITERAL:
        return lambda _rng, out: out.append(chr(value))
    if op == sre.NOT_LITERAL:
        return _choose(_ANY_CHARS.replace(chr(value), ""))
    if op == sre.ANY:
        return _choose(_ANY_CHARS)
    if op == sre.IN:
        return _choose(_class_chars(value))
    if op == sre.CATEGORY:
        return _choose(_CATEGORY_CHARS.get(value, _ANY_CHARS))
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        lo, hi, sub = value
        inner, hi = _emitter(sub), min(hi, lo + 5)

        def repeat(rng: random.Random, out: list[str]) -> None:
            for _ in range(rng.randint(lo, hi)):
                inner(rng, out)

        return repeat
    if op == sre.SUBPATTERN:
        return _emitter(value[-1])
    if op == sre.ATOMIC_GROUP:
        return _emitter(value)
    if op == sre.BRANCH:
        alternatives = [_emitter(alternative) for alternative in value[1]]
        return lambda rng, out: rng.choice(alternatives)(rng, out)
    if op == sre.AT:
        return lambda _rng, _out: None
    raise SchemaError(f"its pattern uses {str(op).lower()}, which no generated text can follow")


def pattern_maker(pattern: str) -> Callable[[random.Random], str]:
    """Text made from ``pattern``'s parse: literals, classes, repeats, groups, alternatives
    (lookarounds and back-references are refused). Callers still check the result."""
    try:
        emit = _emitter(sre_parse.parse(pattern))
    except re.error as exc:
        raise SchemaError(f"pattern {pattern!r} is not a regular expression: {exc}") from None

    def make(rng: random.Random) -> str:
        out: list[str] = []
        emit(rng, out)
        return "".join(out)

    return make
