"""What a field's name or format says it holds, and the Faker value that looks like it.

Schema payloads use it to give ``email`` an e-mail and ``iban`` an IBAN; anonymized captures
use it to put a realistic stand-in where an original value was. A field nothing here knows
gets a value of its type instead (the caller decides what).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from faker import Faker

Make = Callable[[Faker], str]


def uuid_text(f: Faker) -> str:
    """A random UUID: an identifier, so a caller should not draw it from a pool of repeats."""
    return f.uuid4()


def date_time_text(f: Faker) -> str:
    return f.iso8601() + "Z"


def date_text(f: Faker) -> str:
    return f.date()


def time_text(f: Faker) -> str:
    return f.time()


#: The makes whose value is a point in time, by the format they write. Faker draws them up to
#: today, so the same seed gives other values tomorrow: a seeded caller uses its own clock.
TEMPORAL: dict[Make, str] = {date_time_text: "date-time", date_text: "date", time_text: "time"}

#: JSON Schema ``format`` (and Avro ``logicalType``) values, and what they hold.
FORMATS: dict[str, Make] = {
    "email": lambda f: f.email(),
    "idn-email": lambda f: f.email(),
    "uuid": uuid_text,
    "date-time": date_time_text,
    "date": date_text,
    "time": time_text,
    "uri": lambda f: f.uri(),
    "uri-reference": lambda f: f.uri(),
    "iri": lambda f: f.uri(),
    "iri-reference": lambda f: f.uri(),
    "url": lambda f: f.url(),
    "hostname": lambda f: f.hostname(),
    "idn-hostname": lambda f: f.hostname(),
    "ipv4": lambda f: f.ipv4_public(),
    "ipv6": lambda f: f.ipv6(),
    "json-pointer": lambda f: "/" + "/".join(f.words(2)),
    "regex": lambda f: "^" + f.word() + "$",
    "duration": lambda f: f"P{f.random_int(1, 30)}D",
}

#: A field's name (its last part, lower case, without ``_`` or ``-``) matched in order: the
#: first pattern found in the name picks the value.
NAMES: tuple[tuple[str, Make], ...] = (
    (r"email|mail$", lambda f: f.email()),
    (r"iban", lambda f: f.iban()),
    (r"currency", lambda f: f.currency_code()),
    (r"uuid|guid", uuid_text),
    (r"firstname|givenname", lambda f: f.first_name()),
    (r"lastname|surname|familyname", lambda f: f.last_name()),
    (r"fullname|customername|username$|^name$|customer$|owner$", lambda f: f.name()),
    (r"phone|mobile|msisdn", lambda f: f.phone_number()),
    (r"street|address", lambda f: f.street_address()),
    (r"city|town", lambda f: f.city()),
    (r"country", lambda f: f.country_code()),
    (r"zip|postcode|postalcode", lambda f: f.postcode()),
    (r"company|merchant|employer|organi[sz]ation", lambda f: f.company()),
    (
        r"timestamp|datetime|createdat|updatedat|created$|updated$|modified$|at$|time$",
        date_time_text,
    ),
    (r"date|dob|birthday", date_text),
    (r"url|uri|website|link", lambda f: f.url()),
    (r"ip$|ipaddress", lambda f: f.ipv4_public()),
    (r"card|pan$", lambda f: f.credit_card_number()),
    (r"title$|subject$", lambda f: f.sentence(nb_words=4).rstrip(".")),
    (r"description|comment|note|message|text|body", lambda f: f.sentence()),
    (r"sku|product", lambda f: f.bothify("???-#####").upper()),
    (r"status|state$", lambda f: f.random_element(("new", "active", "done"))),
)
_COMPILED = tuple((re.compile(pattern), make) for pattern, make in NAMES)


def _plain(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rsplit(".", 1)[-1].lower())


def faker_for(name: str, fmt: str | None = None) -> Make | None:
    """How to fake a text value of the field ``name`` (with ``format`` or logical type
    ``fmt``), or None when neither says what it holds."""
    if fmt and fmt in FORMATS:
        return FORMATS[fmt]
    plain = _plain(name)
    for pattern, make in _COMPILED:
        if pattern.search(plain):
            return make
    return None
