"""A shop's own messages and the rules of its services, as a team writes them for
kafka-replay: generators of orders and payments, and the functions its incidents name.

- :func:`orders` yields orders, one of them not JSON (a producer changed its serializer),
  marked as the dead-letter topic's;
- :func:`payments` yields a payment for each order id;
- :func:`is_payment` names the inputs a service that joins orders with payments writes nothing
  for (``[expect] filtered``);
- :func:`kind_of` tells a fan-out's two kinds of output apart by a field of the record.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from kafka_replay.workload.payloads import Payload


def orders(count: int, poison_at: int = -1, rng: random.Random | None = None) -> Iterator[Payload]:
    rng = rng or random.Random(0)
    for n in range(count):
        if n == poison_at:
            yield Payload(b"\xac\xed\x00\x05order", key=f"order-{n}", expect="dead_letter")
            continue
        order = {"order_id": f"order-{n}", "amount": round(rng.uniform(5, 500), 2)}
        yield Payload(order, key=f"order-{n}")


def payments(count: int) -> Iterator[Payload]:
    for n in range(count):
        yield Payload({"order_id": f"order-{n}", "paid": True}, key=f"order-{n}")


def is_payment(record) -> bool:  # type: ignore[no-untyped-def]
    return record.topic == "payments"


def kind_of(record) -> str | None:  # type: ignore[no-untyped-def]
    return json.loads(record.value).get("kind")
