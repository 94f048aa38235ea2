"""Realistic inputs for each incident, generated with Faker from a seed.

- :func:`student_onboarding`: a student's biodata and sign-up stages, keyed by student id;
  ``poison_at`` makes some of them poison pills (not JSON: a producer changed its serializer).
- :func:`quiet_events`: a trickle of small events on a low-volume topic.
- :func:`deal_flood`: ~800KB deal documents (~600 options each) published in runs of hundreds
  of copies of one deal id, so each run lands on one partition.
- :func:`quiet_then_wake`: a topic that goes silent for a while and then resumes.
- :func:`profile_changes`: user profiles created, changed and deleted (tombstones) on a
  compacted topic, in windows of one stream so that several workloads can carry it on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date, timedelta
from typing import Any, TypeVar

from faker import Faker

from .partitioner import java_partition
from .records import Pause, Stamper, Step, Workload, WorkloadRecord, encode

T = TypeVar("T")

#: Every generator a definition may name, by name (``@generator`` adds one).
GENERATORS: dict[str, Callable[..., Workload]] = {}


def generator(function: Callable[..., Workload]) -> Callable[..., Workload]:
    """Register a workload generator under its function name, for incident definitions."""
    GENERATORS[function.__name__] = function
    return function


#: What a producer that switched to Java's own serialization writes before an event's text:
#: the stream magic and version (``0xACED 0x0005``), then a string object and its length.
JAVA_SERIALIZED = b"\xac\xed\x00\x05t"
STUDENT_STAGES = ("biodata.uploaded", "account.created", "account.confirmed", "student.onboarded")
#: Distinct values Faker makes once per workload for a field it is slow at (an IBAN costs
#: ~20-40us, ~100x a pick from a list); records then draw from the pool with the seeded source.
POOL_SIZE = 256
#: Event times start at a seeded instant of these years (no wall clock: same seed, same times).
_EPOCH_FROM, _EPOCH_SPAN = 1_577_836_800, 5 * 365 * 86_400  # 2020-01-01 UTC, five years


def _pool(make: Callable[[], T], wanted: int) -> list[T]:
    """``min(wanted, POOL_SIZE)`` values of ``make()`` (at least one)."""
    return [make() for _ in range(max(1, min(wanted, POOL_SIZE)))]


class _Clock:
    """Event times of a live topic: a seeded start, then forward by random gaps of ~``gap_s``.

    Formatted like Faker's ``iso8601()`` (``2021-03-04T05:06:07.123456``); ``strftime`` runs
    once per second of event time, not once per event.
    """

    def __init__(self, source: random.Random, gap_s: float) -> None:
        self._source = source
        self._random = source.random
        self._gap = 2 * gap_s
        self._us = (_EPOCH_FROM + source.randrange(_EPOCH_SPAN)) * 1_000_000
        self._second, self._text = -1, ""

    def birthday(self, youngest: int, oldest: int) -> str:
        """The date of birth of someone ``youngest`` to ``oldest`` years old at this clock's now.

        Faker's ``date_of_birth`` counts from today, so a seed would give other dates tomorrow.
        """
        today = date(1970, 1, 1) + timedelta(days=self._us // 86_400_000_000)
        age_days = self._source.randrange(youngest * 365, (oldest + 1) * 365)
        return (today - timedelta(days=age_days)).isoformat()

    def skip(self, seconds: float) -> None:
        """A silence: the next event is ``seconds`` later."""
        self._us += int(seconds * 1_000_000)

    def tick(self) -> str:
        self._us += int(self._random() * self._gap * 1_000_000)
        second, micro = divmod(self._us, 1_000_000)
        if second != self._second:
            self._second = second
            self._text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._text}.{micro:06d}"


def _skewed_keys(rng: random.Random, keys: list[str], skew: float, count: int) -> list[str]:
    """``count`` keys drawn with Zipf-like weights: 0 is uniform, larger puts more on few keys."""
    weights = [1.0 / (rank + 1) ** skew for rank in range(len(keys))]
    return rng.choices(keys, weights=weights, k=count)


@generator
def student_onboarding(
    count: int = 1000,
    students: int = 100,
    skew: float = 0.0,
    size_bytes: int = 0,
    seed: int = 0,
    rate: float | None = None,
    poison_at: int | list[int] | None = None,
) -> Workload:
    """Onboarding events, each student's passing through the sign-up stages in ``seq`` order.

    ``poison_at``: a position or a list of them (0 the first) whose event a producer wrote
    with another serializer (Java's own): a value that is not JSON, marked for the dead-letter
    topic (``expect = "dead_letter"``); it keeps its key, ``event_id`` header and ``seq``.
    """
    poisoned = frozenset([poison_at] if isinstance(poison_at, int) else poison_at or ())

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        ids = [f"student-{fake.unique.random_int(100000, 999999)}" for _ in range(students)]
        clock = _Clock(fake.random, 1 / rate if rate else 0.5)
        profiles = {
            student: {
                "first_name": fake.first_name(),
                "last_name": fake.last_name(),
                "date_of_birth": clock.birthday(16, 30),
                "email": fake.email(),
                "institution": fake.company(),
                "department": fake.job(),
                "matric_no": fake.bothify("??/####/###").upper(),
            }
            for student in ids
        }
        stage: dict[str, int] = dict.fromkeys(ids, 0)
        for position, student in enumerate(_skewed_keys(rng, ids, skew, count)):
            event = STUDENT_STAGES[stage[student] % len(STUDENT_STAGES)]
            stage[student] += 1
            body = {"type": event, "student": profiles[student], "at": clock.tick()}
            record = stamper.stamp(student, body, pad_to=size_bytes)
            if position in poisoned:
                record = _java_serialized(record)
            yield record

    parameters = {"count": count, "students": students, "skew": skew, "size_bytes": size_bytes}
    if poisoned:
        parameters["poison_at"] = sorted(poisoned)
    return Workload("student-onboarding", seed, build, rate, parameters)


def _java_serialized(record: WorkloadRecord) -> WorkloadRecord:
    """``record`` as a producer that switched to Java serialization writes it: its text as a
    serialized ``java.lang.String`` (not JSON), for the dead-letter topic."""
    text = record.value[:65535]
    value = JAVA_SERIALIZED + len(text).to_bytes(2, "big") + text
    return replace(record, value=value, expect="dead_letter")


class _Settlements:
    """Small settlement events: IBANs and currencies from pools, amounts and times drawn fresh."""

    def __init__(self, fake: Faker, count: int, rate: float | None) -> None:
        self._ibans = _pool(fake.iban, count)
        self._currencies = _pool(fake.currency_code, count)
        self._random = fake.random
        self.clock = _Clock(self._random, 1 / rate if rate else 0.5)

    def __call__(self) -> dict[str, Any]:
        pick = self._random.choice
        return {
            "type": "settlement.recorded",
            "account": pick(self._ibans),
            "amount_cents": self._random.randrange(1, 1_000_000),
            "currency": pick(self._currencies),
            "at": self.clock.tick(),
        }


@generator
def quiet_events(
    count: int = 20, keys: int = 2, size_bytes: int = 0, seed: int = 0, rate: float | None = 2.0
) -> Workload:
    """A low-volume topic: a few small events a second over a handful of keys."""

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        names = [f"account-{i}" for i in range(keys)]
        event = _Settlements(fake, count, rate)
        for key in _skewed_keys(rng, names, 0.0, count):
            yield stamper.stamp(key, event(), pad_to=size_bytes)

    return Workload(
        "quiet-events", seed, build, rate, {"count": count, "keys": keys, "size_bytes": size_bytes}
    )


@generator
def quiet_then_wake(
    before: int = 20,
    idle_s: float = 70.0,
    after: int = 20,
    keys: int = 3,
    seed: int = 0,
    rate: float | None = 5.0,
) -> Workload:
    """Events, then ``idle_s`` seconds of silence, then more events on the same keys."""

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        names = [f"account-{i}" for i in range(keys)]
        event = _Settlements(fake, before + after, rate)
        for key in _skewed_keys(rng, names, 0.0, before):
            yield stamper.stamp(key, event())
        yield Pause(idle_s)
        event.clock.skip(idle_s)
        for key in _skewed_keys(rng, names, 0.0, after):
            yield stamper.stamp(key, event())

    parameters = {"before": before, "idle_s": idle_s, "after": after, "keys": keys}
    return Workload("quiet-then-wake", seed, build, rate, parameters)


PLANS = ("free", "plus", "pro", "team")


@generator
def profile_changes(
    keys: int = 100,
    count: int = 100,
    start: int = 0,
    deletes: tuple[int, int] | None = None,
    seed: int = 0,
    rate: float | None = None,
) -> Workload:
    """User profiles as a compacted topic holds them: each key's value is its latest state.

    The stream creates ``keys`` profiles (its first ``keys`` records), then changes one at
    random per record (an email, a city, a plan); ``deletes = [FROM, TO]``: its records FROM
    to TO - 1 each delete a profile at random instead (a tombstone: no value), and a deleted
    profile is never written again. A workload is ``count`` records of that stream from
    ``start``: workloads with the same ``keys``, ``deletes`` and ``seed`` are windows of one
    stream, so one can carry on where another stopped (its keys' ``seq`` going on rising).
    """
    low, high = deletes if deletes is not None else (keys, keys)
    if not keys <= low <= high:
        raise ValueError(f"deletes {list(deletes or ())} must start at keys ({keys}) or later")
    if high - low >= keys:
        raise ValueError(f"deletes {list(deletes or ())} would delete every one of {keys} keys")

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        clock = _Clock(fake.random, 1 / rate if rate else 0.5)
        names, emails, cities = (
            _pool(fake.name, keys),
            _pool(fake.email, keys),
            _pool(fake.city, keys),
        )
        live = [f"profile-{n:04d}" for n in range(keys)]
        profiles: dict[str, dict[str, str]] = {}
        for position in range(start + count):
            if position < keys:
                key, kind = live[position], "profile.created"
                profiles[key] = {
                    "name": rng.choice(names),
                    "email": rng.choice(emails),
                    "city": rng.choice(cities),
                    "plan": rng.choice(PLANS),
                }
            elif low <= position < high:
                key = live.pop(rng.randrange(len(live)))
                record = stamper.tombstone(key)
                if position >= start:
                    yield record
                continue
            else:
                key, kind = rng.choice(live), "profile.updated"
                changed = rng.choice(("email", "city", "plan"))
                pool = {"email": emails, "city": cities, "plan": PLANS}[changed]
                profiles[key] = {**profiles[key], changed: rng.choice(pool)}
            body = {"type": kind, "profile": profiles[key], "at": clock.tick()}
            record = stamper.stamp(key, body)
            if position >= start:
                yield record

    parameters = {"keys": keys, "count": count, "start": start, "deletes": deletes}
    return Workload("profile-changes", seed, build, rate, parameters)


def _description(source: random.Random, paragraphs: list[str], length: int) -> str:
    """``length`` characters of Faker paragraphs picked at random (``fake.text`` costs ~1ms)."""
    text = source.choice(paragraphs)
    while len(text) < length:
        text += "\n" + source.choice(paragraphs)
    return text[:length]


def _deal_document(fake: Faker, deal_id: str, options: int, target_bytes: int) -> dict[str, Any]:
    per_option = max(0, target_bytes // max(options, 1) - 175)  # 175: an option's other fields
    paragraphs = _pool(fake.paragraph, options)
    return {
        "deal_id": deal_id,
        "title": fake.catch_phrase(),
        "merchant": {"name": fake.company(), "city": fake.city(), "phone": fake.phone_number()},
        "revision": 0,
        "options": [
            {
                "option_id": f"{deal_id}-opt-{n}",
                "title": fake.bs(),
                "price_cents": fake.random_int(500, 50000),
                "value_cents": fake.random_int(50000, 90000),
                "quantity": fake.random_int(0, 500),
                "active": True,
                "description": _description(fake.random, paragraphs, per_option),
            }
            for n in range(options)
        ],
    }


class _DealJson:
    """A deal document and its encoding, kept in step: a small change re-encodes one option.

    Encoding the whole ~800KB document for every copy cost ~4ms; joining the options' cached
    bytes gives the same bytes as ``encode({"type": "deal.updated", "deal": document})``.
    """

    def __init__(self, document: dict[str, Any]) -> None:
        if list(document)[-2:] != ["revision", "options"]:
            raise ValueError("a deal document ends with its revision and options")
        self.document = document
        head = {k: v for k, v in document.items() if k not in ("revision", "options")}
        self._head = ('{"type":"deal.updated","deal":' + encode(head)[:-1]).encode()
        self._options = [self._encode_option(n) for n in range(len(document["options"]))]

    def _encode_option(self, n: int) -> bytes:
        """Option ``n`` as JSON with the comma that follows it in the list (none after the last)."""
        last = n == len(self.document["options"]) - 1
        return (encode(self.document["options"][n]) + ("" if last else ",")).encode()

    def toggle(self, option: int) -> None:
        """Switch one option on or off, as a deal editor's save does, and bump the revision."""
        changed = self.document["options"][option]
        changed["active"] = not changed["active"]
        self._options[option] = self._encode_option(option)
        self.document["revision"] += 1

    def body(self) -> bytes:
        revision = f',"revision":{self.document["revision"]},"options":['.encode()
        return b"".join((self._head, revision, *self._options, b"]}}"))


@generator
def deal_flood(
    deals: int = 2,
    runs: int = 2,
    run_length: tuple[int, int] = (200, 300),
    options: int = 600,
    target_bytes: int = 800_000,
    seed: int = 0,
    rate: float | None = None,
    same_partition_of: int | None = None,
    pause_after: int | None = None,
    pause_s: float = 0.0,
) -> Workload:
    """Runs of ``run_length`` copies of one ~``target_bytes`` deal, each copy a small change.

    Like a save callback firing once per option update: the same deal is republished again
    and again, so every run lands on the partition its deal id hashes to. With
    ``same_partition_of=N`` every deal id hashes to one partition of an N-partition topic (the
    unlucky clump of chatty deals on one partition). ``pause_after=N`` goes quiet for
    ``pause_s`` seconds after N records (room to change the topic mid-flood).
    """

    def deal_ids(fake: Faker) -> list[str]:
        ids: list[str] = []
        while len(ids) < deals:
            deal = f"deal-{fake.unique.random_int(1000000, 9999999)}"
            clump = same_partition_of
            if clump and ids and java_partition(deal, clump) != java_partition(ids[0], clump):
                continue
            ids.append(deal)
        return ids

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        ids = deal_ids(fake)
        documents = {
            deal: _DealJson(_deal_document(fake, deal, options, target_bytes)) for deal in ids
        }
        sent = 0
        for run in range(runs):
            deal = ids[run % deals]
            document = documents[deal]
            for _ in range(rng.randint(*run_length)):
                document.toggle(rng.randrange(options))
                if sent == pause_after:
                    yield Pause(pause_s)
                sent += 1
                yield stamper.stamp_encoded(deal, document.body())

    parameters = {
        "deals": deals,
        "runs": runs,
        "run_length": list(run_length),
        "options": options,
        "target_bytes": target_bytes,
        "same_partition_of": same_partition_of,
        "pause_after": pause_after,
        "pause_s": pause_s,
    }
    return Workload("deal-flood", seed, build, rate, parameters)
