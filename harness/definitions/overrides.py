"""Settings given on the command line (``KEY=VALUE``), typed the way a definition types them."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from typing import Any

from kafka_replay.apps.client_config import check_client_config


def setting_value(text: str) -> Any:
    """``500`` is an integer, ``true`` a boolean, ``2.5`` a float; anything else a string.

    The same value in a definition's TOML table would have that type, so a setting given on
    the command line is checked and handed to the app exactly as one written in the file.
    """
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    return value if isinstance(value, (bool, int, float)) else text


def parse_settings(items: Iterable[str], option: str) -> dict[str, Any]:
    """``["max.poll.records=500"]`` as ``{"max.poll.records": 500}``; malformed items refused."""
    settings: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{option} expects KEY=VALUE, got {item!r}")
        settings[key.strip()] = setting_value(value.strip())
    return settings


def client_settings(items: Iterable[str]) -> dict[str, Any]:
    """``--client-config`` items, checked like a definition's ``[client]`` table."""
    settings = parse_settings(items, "--client-config")
    problem = check_client_config(settings)
    if problem:
        raise ValueError(f"--client-config: {problem}")
    return settings
