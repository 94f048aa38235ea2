"""Realistic inputs for each incident, generated with Faker from a seed.

- :func:`student_onboarding`: a student's biodata and sign-up stages, keyed by student id.
- :func:`quiet_events`: a trickle of small events on a low-volume topic.
- :func:`deal_flood`: ~800KB deal documents (~600 options each) published in runs of hundreds
  of copies of one deal id, so each run lands on one partition.
- :func:`quiet_then_wake`: a topic that goes silent for a while and then resumes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from faker import Faker

from .partitioner import java_partition
from .records import Pause, Stamper, Step, Workload

#: Every generator a definition may name, by name (``@generator`` adds one).
GENERATORS: dict[str, Callable[..., Workload]] = {}


def generator(function: Callable[..., Workload]) -> Callable[..., Workload]:
    """Register a workload generator under its function name, for incident definitions."""
    GENERATORS[function.__name__] = function
    return function


STUDENT_STAGES = ("biodata.uploaded", "account.created", "account.confirmed", "student.onboarded")


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
) -> Workload:
    """Onboarding events, each student's passing through the sign-up stages in ``seq`` order."""

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        ids = [f"student-{fake.unique.random_int(100000, 999999)}" for _ in range(students)]
        profiles = {
            student: {
                "first_name": fake.first_name(),
                "last_name": fake.last_name(),
                "date_of_birth": fake.date_of_birth(minimum_age=16, maximum_age=30).isoformat(),
                "email": fake.email(),
                "institution": fake.company(),
                "department": fake.job(),
                "matric_no": fake.bothify("??/####/###").upper(),
            }
            for student in ids
        }
        stage: dict[str, int] = dict.fromkeys(ids, 0)
        for student in _skewed_keys(rng, ids, skew, count):
            event = STUDENT_STAGES[stage[student] % len(STUDENT_STAGES)]
            stage[student] += 1
            body = {"type": event, "student": profiles[student], "at": fake.iso8601()}
            yield stamper.stamp(student, body, pad_to=size_bytes)

    return Workload(
        "student-onboarding",
        seed,
        build,
        rate,
        {"count": count, "students": students, "skew": skew, "size_bytes": size_bytes},
    )


def _small_event(fake: Faker) -> dict[str, Any]:
    return {
        "type": "settlement.recorded",
        "account": fake.iban(),
        "amount_cents": fake.random_int(1, 999_999),
        "currency": fake.currency_code(),
        "at": fake.iso8601(),
    }


@generator
def quiet_events(
    count: int = 20, keys: int = 2, size_bytes: int = 0, seed: int = 0, rate: float | None = 2.0
) -> Workload:
    """A low-volume topic: a few small events a second over a handful of keys."""

    def build(rng: random.Random, fake: Faker, stamper: Stamper) -> Iterator[Step]:
        names = [f"account-{i}" for i in range(keys)]
        for key in _skewed_keys(rng, names, 0.0, count):
            yield stamper.stamp(key, _small_event(fake), pad_to=size_bytes)

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
        for key in _skewed_keys(rng, names, 0.0, before):
            yield stamper.stamp(key, _small_event(fake))
        yield Pause(idle_s)
        for key in _skewed_keys(rng, names, 0.0, after):
            yield stamper.stamp(key, _small_event(fake))

    parameters = {"before": before, "idle_s": idle_s, "after": after, "keys": keys}
    return Workload("quiet-then-wake", seed, build, rate, parameters)


def _deal_document(fake: Faker, deal_id: str, options: int, target_bytes: int) -> dict[str, Any]:
    per_option = max(0, target_bytes // max(options, 1) - 175)  # 175: an option's other fields
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
                "description": fake.text(max_nb_chars=max(per_option, 20))[:per_option].ljust(
                    per_option
                ),
            }
            for n in range(options)
        ],
    }


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
        documents = {deal: _deal_document(fake, deal, options, target_bytes) for deal in ids}
        sent = 0
        for run in range(runs):
            deal = ids[run % deals]
            document = documents[deal]
            for _ in range(rng.randint(*run_length)):
                option = rng.randrange(options)
                document["options"][option]["active"] = not document["options"][option]["active"]
                document["revision"] += 1
                if sent == pause_after:
                    yield Pause(pause_s)
                sent += 1
                yield stamper.stamp(deal, {"type": "deal.updated", "deal": document})

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
