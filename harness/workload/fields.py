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

#: JSON Schema ``format`` (and Avro ``logicalType``) values, and what they hold.
FORMATS: dict[str, Make] = {
    "email": lambda f: f.email(),
    "idn-email": lambda f: f.email(),
    "uuid": lambda f: f.uuid4(),
    "date-time": lambda f: f.iso8601() + "Z",
    "date": lambda f: f.date(),
    "time": lambda f: f.time(),
    "uri": lambda f: f.uri(),
    "url": lambda f: f.url(),
    "hostname": lambda f: f.hostname(),
    "ipv4": lambda f: f.ipv4_public(),
    "ipv6": lambda f: f.ipv6(),
}

#: A field's name (its last part, lower case, without ``_`` or ``-``) matched in order: the
#: first pattern found in the name picks the value.
NAMES: tuple[tuple[str, Make], ...] = (
    (r"email|mail$", lambda f: f.email()),
    (r"iban", lambda f: f.iban()),
    (r"currency", lambda f: f.currency_code()),
    (r"uuid|guid", lambda f: f.uuid4()),
    (r"firstname|givenname", lambda f: f.first_name()),
    (r"lastname|surname|familyname", lambda f: f.last_name()),
    (r"fullname|customername|username$|^name$|customer$|owner$", lambda f: f.name()),
    (r"phone|mobile|msisdn", lambda f: f.phone_number()),
    (r"street|address", lambda f: f.street_address()),
    (r"city|town", lambda f: f.city()),
    (r"country", lambda f: f.country_code()),
    (r"zip|postcode|postalcode", lambda f: f.postcode()),
    (r"company|merchant|employer|organi[sz]ation", lambda f: f.company()),
    (r"timestamp|datetime|createdat|updatedat|at$|time$", lambda f: f.iso8601() + "Z"),
    (r"date|dob|birthday", lambda f: f.date()),
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
