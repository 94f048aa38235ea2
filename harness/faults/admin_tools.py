"""The harness's own Java admin tools (``jvm/``): transactions and share groups, which
confluent-kafka's admin client cannot describe or abort. Each is compiled once against the
default Kafka release's clients and prints one JSON line of what it found."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_replay.apps.jvm_apps import JAVA_OPTIONS, compiled_apps, kafka_clients_classpath
from kafka_replay.cluster.versions import DEFAULT_KAFKA_VERSION
from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.process import run_tool

SOURCES = Path(__file__).parent / "jvm"
#: How long all admin calls of one use of a tool may take together.
TIMEOUT_S = 20.0
#: What the JVM needs on top of that to start and stop (the machine may be busy).
JVM_MARGIN_S = 30.0
STDERR_TAIL_LINES = 15


def admin_tool_command(
    main_class: str, prefix: str, args: Sequence[str], timeout: float
) -> list[str]:
    """The command running tool ``main_class``; ``prefix``: its timeout property's
    (``transaction.admin``: ``-Dtransaction.admin.timeout.ms``)."""
    return [
        find_java(),
        *JAVA_OPTIONS,
        f"-D{prefix}.timeout.ms={int(timeout * 1000)}",
        "-cp",
        _classpath(DEFAULT_KAFKA_VERSION),
        main_class,
        *args,
    ]


def run_admin_tool(
    main_class: str, prefix: str, args: Sequence[str], timeout: float, error: type[Exception]
) -> dict[str, Any]:
    """Run one of the harness's Java admin tools (``main_class``) and read the JSON line it
    prints last; ``prefix``: its timeout property's (``transaction.admin``); ``error`` with what
    it said on stderr when it fails."""
    command = admin_tool_command(main_class, prefix, args, timeout)
    what = f"{main_class} {' '.join(args)}"
    result = run_tool(
        command, what, error, timeout + JVM_MARGIN_S, tail_lines=STDERR_TAIL_LINES, keep=_said
    )
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as exc:
        said = "\n".join(filter(_said, result.stderr.splitlines()[-STDERR_TAIL_LINES:]))
        raise error(
            f"{what} printed no JSON line ({exc}): {result.stdout[-500:]!r}\n{said}"
        ) from None


def _said(line: str) -> bool:
    """A line of a tool's output worth showing (SLF4J's start-up notes are not)."""
    return bool(line) and not line.startswith("SLF4J:")


@functools.cache
def _classpath(version: str) -> str:
    jars = kafka_clients_classpath(version)
    classes = compiled_apps(SOURCES, jars, f"kafka-clients-{version}")
    return ":".join([str(classes), *(str(jar) for jar in jars)])
