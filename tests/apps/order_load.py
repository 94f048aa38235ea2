"""A team's own generator of orders, as the docs say to write one.

``generator = "tests.apps.order_load:orders"`` in a workload table (or a ``--payload`` file)
calls it with the table's parameters and a seeded ``fake``; the harness stamps identity
around what it yields and writes each record's event_id into ``id_field``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from faker import Faker

STATUSES = ("PLACED", "PAID", "SHIPPED")


def orders(fake: Faker, count: int | None = None, customers: int = 20) -> Iterator[dict[str, Any]]:
    """``count`` orders (endless without one) from ``customers`` customers."""
    names = [fake.unique.name() for _ in range(customers)]
    made = 0
    while count is None or made < count:
        yield {
            "order_id": fake.uuid4(),
            "customer": fake.random_element(names),
            "amount": round(fake.pyfloat(min_value=1, max_value=500), 2),
            "currency": fake.random_element(("EUR", "USD", "GBP")),
            "status": fake.random_element(STATUSES),
        }
        made += 1
