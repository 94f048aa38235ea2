"""A service that accepts only its own order schema, replayed under the catalog's incidents.

``tests/apps/orders.py`` rejects anything but an order (first shown on the built-in
generators' JSON, so a permissive app cannot pass here); its charges drop headers and carry
only ``order_id``, where the payload's ``id_field`` put each record's event_id. It is fed by
a ``--payload`` file of each kind a team writes: its own generator, a JSON Schema, and an
Avro schema registered with a real schema registry (read with the stock deserializer).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_replay.report.outcome import Outcome
from kafka_replay.workload import GENERATORS

APPS = Path(__file__).parent / "apps"
SCHEMAS = APPS.parent.parent / "docs" / "examples"

Replay = Callable[..., Outcome]

#: what a team writes in a ``--payload`` file for each way of making its orders
PAYLOADS = {
    "team-generator": 'generator = "tests.apps.order_load:orders"\ncustomers = 12\n',
    "json-schema": f'schema = "{SCHEMAS / "order.schema.json"}"\nkeys = 12\n',
    "avro-registry": f'schema = "{SCHEMAS / "order.avsc"}"\nformat = "avro"\nregistry = true\n',
}
IDENTITY = 'id_field = "order_id"\nkey_field = "customer"\n'
#: the app's reader for each payload
FORMATS = {"team-generator": "json", "json-schema": "json", "avro-registry": "avro-registry"}
#: the order service's flags under each incident: (vulnerable, remediated)
MODES = {
    "poll-timeout-rebalance": ("--work-ms 12", "--work-ms 12"),
    "zombie-commit": (
        "--commit-every-s 1 --work-ms 50",
        "--commit-every-s 1 --work-ms 50 --only-assigned",
    ),
}


def orders_app(payload: str, flags: str) -> str:
    argv = [sys.executable, str(APPS / "orders.py"), "--format", FORMATS[payload]]
    return shlex.join([*argv, *shlex.split(flags)])


def payload_file(tmp_path: Path, payload: str) -> Path:
    path = tmp_path / f"{payload}.toml"
    path.write_text(PAYLOADS[payload] + IDENTITY)
    return path


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_the_order_service_rejects_the_built_in_json(name: str) -> None:
    from tests.apps.orders import Rejected, json_reader

    read = json_reader()
    for record in list(GENERATORS[name]().records())[:20]:
        with pytest.raises(Rejected):
            read(record.value, "orders")


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("incident", sorted(MODES))
@pytest.mark.parametrize("profile", ["vulnerable", "remediated"])
def test_the_order_service_under_the_catalog(
    replay_incident: Replay, tmp_path: Path, incident: str, payload: str, profile: str
) -> None:
    if payload == "avro-registry":
        from kafka_replay.workload.registry import registry_unavailable

        reason = registry_unavailable()
        if reason:
            pytest.skip(reason)
    flags = MODES[incident][profile == "remediated"]
    outcome = replay_incident(
        incident,
        profile,
        app=orders_app(payload, flags),
        payload=payload_file(tmp_path, payload),
        guarantee="at-least-once",
    )
    print(outcome.explain())
    assert outcome.reproduced is (profile == "vulnerable"), outcome.explain()
    if profile == "remediated":  # every order read (the stock deserializer too) and charged
        assert (outcome.passed, outcome.result) == (True, "guarantee held"), outcome.explain()
        assert outcome.anomalies.get("lost", 0) == 0 and outcome.anomalies.get("unexpected", 0) == 0
