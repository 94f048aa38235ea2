"""A team's own generator: ``module:function`` on the team's path, or a name registered under
the ``kafka_replay.generators`` entry point group.

The function is called with the workload table's parameters as keywords (``count``, ``seed``,
``rate`` and its own), and with a seeded ``fake`` (Faker) and ``rng`` (``random.Random``) when
it names them. It yields what its records carry: :class:`~.payloads.Payload` objects, or
plain documents (dicts), bytes or text, or ``(key, value)`` pairs. The harness stamps
identity (the ``event_id`` header, ``seq``) around them, so acks and the checker work as for
the built-in generators.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any

from faker import Faker

from .generators import GENERATORS
from .payloads import Encoding, Payload, PayloadError, PayloadSource

ENTRY_POINT_GROUP = "kafka_replay.generators"
#: Keywords the harness hands over itself, when the function names them.
SEEDED = ("fake", "rng")


def registered_generators() -> dict[str, Any]:
    """Team generators installed under the entry point group, by name (not yet loaded)."""
    return {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}


def load_generator(spec: str) -> Callable[..., Any]:
    """The function ``spec`` names: ``module:function`` or a registered name."""
    from kafka_replay.apps.contract import load_callable

    if ":" in spec:
        return load_callable(spec)
    registered = registered_generators()
    if spec not in registered:
        known = ", ".join([*GENERATORS, *sorted(registered)])
        raise ValueError(
            f"unknown generator {spec!r} (give module:function, or a name under the "
            f"{ENTRY_POINT_GROUP} entry point group); known: {known}"
        )
    try:
        return registered[spec].load()
    except Exception as exc:  # the team's module: any error it raises on import
        raise ValueError(f"generator {spec!r} does not load: {exc}") from exc


def check_parameters(
    spec: str, function: Callable[..., Any], parameters: Mapping[str, Any]
) -> None:
    """Raise ValueError when ``function`` cannot take ``parameters`` (before anything runs)."""
    given = _arguments(function, parameters, None, None)
    try:
        inspect.signature(function).bind(**given)
    except TypeError as exc:
        unknown = not_taken(function, given)
        said = unknown[1] if unknown is not None else str(exc)
        raise ValueError(f"{spec} does not take these parameters: {said}") from None


def not_taken(
    function: Callable[..., Any], parameters: Mapping[str, Any]
) -> tuple[str, str] | None:
    """The first of ``parameters`` that ``function`` does not take, and what to say of it: the
    parameters it does take, not Python's ``unexpected keyword argument``. None when it takes
    them all (or any keyword), or has no signature to read."""
    try:
        accepted = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        return None
    unknown = next((key for key in parameters if key not in accepted), None)
    if unknown is None:
        return None
    takes = [
        name
        for name, p in accepted.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name not in SEEDED
    ]
    return unknown, f"no parameter {unknown}; it takes {', '.join(takes) or 'none'}"


def _arguments(
    function: Callable[..., Any],
    parameters: Mapping[str, Any],
    fake: Faker | None,
    rng: random.Random | None,
) -> dict[str, Any]:
    """The table's parameters, and the seeded sources the function names; ``rate`` and
    ``seed`` are the harness's too, so they go only to a function that takes them."""
    accepted = inspect.signature(function).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    given = {
        name: value
        for name, value in parameters.items()
        if name not in ("rate", "seed") or name in accepted or takes_any
    }
    seeded = {"fake": fake, "rng": rng}
    given.update({name: seeded[name] for name in SEEDED if name in accepted})
    return given


def _payload(item: Any) -> Payload:
    if isinstance(item, Payload):
        return item
    if isinstance(item, (dict, bytes, str)):
        return Payload(item)
    if isinstance(item, tuple) and len(item) == 2:
        return Payload(item[1], None if item[0] is None else str(item[0]))
    raise TypeError(
        f"yielded a {type(item).__name__}; yield Payload(...), a dict, bytes, text or (key, value)"
    )


def team_source(
    spec: str,
    function: Callable[..., Any],
    parameters: Mapping[str, Any],
    encoding: Encoding,
    seed: int = 0,
    rate: float | None = None,
) -> PayloadSource:
    """The messages ``function`` yields, stamped and encoded; its errors name ``spec`` and the
    record's position."""

    def payloads(rng: random.Random, fake: Faker) -> Iterator[Payload]:
        produced = function(**_arguments(function, parameters, fake, rng))
        try:
            items = iter(produced)
        except TypeError:
            raise PayloadError(
                f"{spec} returned a {type(produced).__name__}, not records to iterate"
            ) from None
        position = 0
        while True:
            try:
                item = next(items)
            except StopIteration:
                return
            except Exception as exc:  # the team's code: whatever it raises is reported
                raise PayloadError(
                    f"{spec} failed at record {position}: {type(exc).__name__}: {exc}"
                ) from exc
            try:
                yield _payload(item)
            except TypeError as exc:
                raise PayloadError(f"{spec} record {position}: {exc}") from None
            position += 1

    return PayloadSource(spec, payloads, encoding, seed, rate, {"generator": spec, **parameters})
