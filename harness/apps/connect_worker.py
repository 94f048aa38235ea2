"""A Kafka Connect worker as the app under test: ``python -m kafka_replay.apps.connect_worker
CONNECTOR.json [--plugin P]... [--worker KEY=VALUE]... [--set KEY=VALUE]...``.

It follows the app contract like any other app, so every face of the harness runs it (``--app``,
a definition's ``[app] command``, pytest, the action) and every verb reaches it: the worker's
JVM runs in this process's group, so a kill -9, a freeze or a stop of the instance is one of
the worker. Each instance starts one worker of a distributed Connect cluster whose group and
internal topics are named for ``REPLAY_GROUP_ID``, with its REST listener on 127.0.0.1 (the
same port each time the instance restarts, so Connect sees the same worker come back), then
submits the connector: its JSON with the contract's placeholders filled in (``{input_topic}``,
``{bootstrap}``, ``{jdbc_url}``, ...), ``--set`` over it, and its consumers in the run's group
(``consumer.override.group.id``) unless the connector names one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_replay.servers.ports import free_ports
from kafka_replay.servers.process import spawn_in_group, wait_answering
from kafka_replay.servers.server_errors import ServerError

from . import connect_runtime
from .contract import CLIENT_PROPERTIES, AppContext, fill_placeholders

#: How long a worker gets to answer on its REST port after its JVM started.
START_TIMEOUT_S = 120.0


def read_connector(path: Path) -> tuple[str, dict[str, Any]]:
    """``(name, config)`` of a connector file: ``{"name": ..., "config": {...}}`` as Connect's
    REST API takes it, or the config alone with its ``name`` inside."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise connect_runtime.ConnectError(f"cannot read connector {path}: {exc}") from None
    config = document.get("config", document) if isinstance(document, dict) else None
    name = document.get("name") if isinstance(document, dict) else None
    if not isinstance(config, dict) or not isinstance(name := name or config.get("name"), str):
        raise connect_runtime.ConnectError(
            f"{path}: a connector is a JSON object with a name and a config "
            '({"name": "...", "config": {"connector.class": ...}})'
        )
    return name, {key: value for key, value in config.items() if key != "name"}


def connector_config(
    config: Mapping[str, Any], context: AppContext, overrides: Sequence[str]
) -> dict[str, str]:
    """The config submitted: placeholders filled, ``KEY=VALUE`` overrides over it, and the
    run's group for its consumers unless the connector names one."""
    filled = {key: fill_placeholders(str(value), context) for key, value in config.items()}
    filled.update(pairs(overrides, "--set"))
    filled.setdefault("consumer.override.group.id", context.group_id)
    return filled


def pairs(given: Sequence[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments as a mapping (a malformed one is refused, naming ``option``)."""
    found = {}
    for item in given:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"{option} {item!r}: expected KEY=VALUE")
        found[key.strip()] = value
    return found


def client_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The incident's client settings in Apache Kafka's names (the contract's properties file:
    one ``key=value`` a line, ``=`` and ``\\`` escaped by a backslash)."""
    path = environ.get(CLIENT_PROPERTIES)
    if not path or not Path(path).is_file():
        return {}
    found = {}
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(("#", "!")):
            key, value = [*re.split(r"(?<!\\)=", line.strip(), maxsplit=1), ""][:2]
            found[_unescaped(key)] = _unescaped(value)
    return found


def _unescaped(text: str) -> str:
    return re.sub(r"\\(.)", lambda match: {"n": "\n", "t": "\t"}.get(match[1], match[1]), text)


def rest_port(work_dir: Path, instance: int) -> int:
    """The instance's REST port: the one it had before, while it is free, else a new one."""
    saved = work_dir / f"connect-worker-{instance}.port"
    if saved.is_file():
        port = int(saved.read_text())
        if _free(port):
            return port
    port = free_ports(1)[0]
    saved.write_text(str(port))
    return port


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_replay.apps.connect_worker",
        description="Run a Kafka Connect worker with a connector as the app under test.",
    )
    parser.add_argument("connector", type=Path, help="the connector's JSON, as Connect takes it")
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        help="a plugin.path directory or Maven coordinates group:artifact:version (repeatable)",
    )
    parser.add_argument(
        "--worker", action="append", default=[], help="a worker setting KEY=VALUE (repeatable)"
    )
    parser.add_argument(
        "--set", action="append", default=[], help="a connector setting KEY=VALUE over the file's"
    )
    parser.add_argument("--version", default=connect_runtime.CONNECT_VERSION)
    parser.add_argument(
        "--fetch",
        action="store_true",
        help="only fetch the worker and the plugins from Maven Central (once, then cached), "
        "as a set-up step before the first run",
    )
    arguments = parser.parse_args(argv)
    try:
        if arguments.fetch:
            fetch(arguments.version, arguments.plugin)
            return 0
        return run_worker(arguments)
    except (connect_runtime.ConnectError, ServerError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2


def fetch(version: str, plugins: Sequence[str]) -> None:
    """Resolve the worker of ``version`` and ``plugins`` into the cache, saying where: what a
    first start would otherwise spend of its time to join the group."""
    jars = connect_runtime.connect_classpath(version)
    print(f"Connect {version}: {len(jars)} jars in {jars[0].parent}")
    for plugin in plugins:
        print(f"{plugin}: {connect_runtime.plugin_path(plugin)}")


def run_worker(arguments: argparse.Namespace) -> int:
    """Start the worker, submit the connector, and last as long as the worker does (its exit
    code, or 128 + the signal that ended it)."""
    context = AppContext.from_env()
    name, config = read_connector(arguments.connector)
    submitted = connector_config(config, context, arguments.set)
    settings = pairs(arguments.worker, "--worker")
    plugins = [connect_runtime.plugin_path(plugin) for plugin in arguments.plugin]
    properties_file = os.environ.get(CLIENT_PROPERTIES)
    with contextlib.ExitStack() as scratch:
        work_dir = (  # the run's: the instance's port is kept there across restarts
            Path(properties_file).parent
            if properties_file
            else Path(scratch.enter_context(tempfile.TemporaryDirectory()))
        )
        port = rest_port(work_dir, context.instance)
        properties = connect_runtime.worker_properties(
            bootstrap=context.bootstrap_servers,
            group=context.group_id,
            rest_port=port,
            plugins=plugins,
            client=client_properties(os.environ),
            settings=settings,
        )
        worker_file = work_dir / f"connect-worker-{context.instance}.properties"
        connect_runtime.write_properties(worker_file, properties)
        sys.stdout.flush()
        worker = spawn_in_group(
            [*connect_runtime.worker_command(arguments.version), str(worker_file)],
            sys.stdout.buffer,
        )
        for stop in (signal.SIGTERM, signal.SIGINT):
            signal.signal(stop, lambda number, _frame: worker.send_signal(number))
        threading.Thread(target=_submit, args=(worker, port, name, submitted), daemon=True).start()
        code = worker.wait()
    return code if code >= 0 else 128 - code


def _submit(worker: Any, port: int, name: str, config: Mapping[str, str]) -> None:
    """Submit the connector once the worker answers; a worker that never does, or a
    connector Connect refuses, ends the worker with the reason on the app's log."""
    why = wait_answering(
        lambda: connect_runtime.rest_answers(port), worker.poll, START_TIMEOUT_S, interval=0.2
    )
    try:
        if why is not None:
            raise connect_runtime.ConnectError(f"the Connect worker {why}")
        connect_runtime.put_connector(port, name, config)
    except connect_runtime.ConnectError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        worker.kill()
        return
    print(f"connector {name} submitted to the worker on 127.0.0.1:{port}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
