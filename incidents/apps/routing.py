"""Where a reference service puts each input, as an incident's ``[expect]`` says: a record it
cannot deserialize (a poison pill) or one ``--bad`` names goes where ``--on-bad`` says, one
``--filtered`` names is dropped, every other one is a result on the output.

``--bad`` and ``--filtered`` are each a ``module:function`` over the input as an ``[expect]``
predicate sees it (``kafka_replay.workload.expect.InputRecord``, its topic ``input``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Literal

from confluent_kafka import Message

from kafka_replay.apps import load_callable
from kafka_replay.workload.expect import InputRecord

Place = Literal["bad", "filtered", "output"]


def add_options(parser: argparse.ArgumentParser, on_bad: Sequence[str]) -> None:
    """``--on-bad`` (one of ``on_bad``), ``--dead-letter-topic``, ``--bad`` and ``--filtered``."""
    parser.add_argument("--on-bad", choices=on_bad, help="a value that is not a JSON object")
    parser.add_argument("--dead-letter-topic", help="where --on-bad dead-letter writes it")
    parser.add_argument("--bad", type=load_callable, help="module:function: more bad records")
    parser.add_argument("--filtered", type=load_callable, help="module:function: records dropped")


def check_options(parser: argparse.ArgumentParser, options: argparse.Namespace) -> None:
    if options.on_bad == "dead-letter" and not options.dead_letter_topic:
        parser.error("--on-bad dead-letter needs --dead-letter-topic")


def place_of(message: Message, options: argparse.Namespace) -> Place:
    """Where ``message`` goes, in the order an ``[expect]``'s marks are given in: a poison pill,
    then bad, then filtered. Without ``--on-bad`` nothing is bad (an undecodable value fails
    where the service decodes it)."""
    if options.on_bad and (
        not decodes(message) or bool(options.bad and options.bad(as_input(message)))
    ):
        return "bad"
    if options.filtered and options.filtered(as_input(message)):
        return "filtered"
    return "output"


def as_input(message: Message) -> InputRecord:
    """The record as an ``[expect]`` predicate sees an input."""
    headers = {name: value or b"" for name, value in message.headers() or []}
    key = message.key()
    return InputRecord(
        "input",
        None if key is None else key.decode(errors="replace"),
        message.value() or b"",
        headers,
        headers.get("event_id", b"").decode(errors="replace"),
    )


def decodes(message: Message) -> bool:
    """Whether the record's value is a JSON object, as the service's deserializer wants it."""
    try:
        return isinstance(json.loads(message.value() or b""), dict)
    except ValueError:  # not JSON, or not UTF-8 text at all
        return False
