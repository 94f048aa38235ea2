"""Output-id functions for tests: ``broken`` raises on every record, as a buggy one would."""

from __future__ import annotations

from kafka_replay.apps.correlation import OutputRecord


def broken(record: OutputRecord) -> str:
    raise KeyError("invoice_id")
