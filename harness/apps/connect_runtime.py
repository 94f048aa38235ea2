"""Kafka Connect from Maven Central: a distributed worker's classpath, its plugins, its
settings, and the REST calls that submit a connector. One place for every use of Connect.

Every listener a worker opens is on 127.0.0.1 on a port the caller chose (Connect's REST
listener binds all interfaces unless told otherwise). Internal topics take the broker's own
replication factor and one partition each, so a worker starts in seconds on any cluster.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_replay.servers.jvm import find_java
from kafka_replay.servers.maven import Artifact, resolve_classpath
from kafka_replay.waiting import wait_for

from .client_config import properties_line

#: The Connect release a worker runs unless told otherwise (``--version``).
CONNECT_VERSION = "4.4.0"
#: What a worker's JVM is given: Connect and a connector or two, on the 2-core machine.
JVM_OPTIONS = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
#: Connect's log, on the app's output: INFO with times, as Connect's own distribution logs
#: (SLF4J's simple binding: Kafka's POMs carry no logging backend), the plugin scan's at WARN.
LOGGING = (
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss,SSS",
    "-Dorg.slf4j.simpleLogger.logFile=System.out",
    "-Dorg.slf4j.simpleLogger.log.org.reflections=warn",
)
DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"
#: Left out of a plugin resolved from Maven: the worker's own. Kafka's API would only be shadowed;
#: a plugin's older Jackson breaks as soon as it looks for Jackson modules, since the worker's
#: (Blackbird) are found on the worker's classpath but are not subtypes of the plugin's classes.
PROVIDED = (
    "org.apache.kafka:connect-api",
    "org.apache.kafka:kafka-clients",
    "com.fasterxml.jackson.core:jackson-core",
    "com.fasterxml.jackson.core:jackson-databind",
    "com.fasterxml.jackson.core:jackson-annotations",
)


class ConnectError(RuntimeError):
    """A worker that would not start, or a connector it refused."""


def connect_classpath(
    version: str = CONNECT_VERSION, *more: Artifact, name: str | None = None
) -> list[Path]:
    """``connect-runtime`` of ``version`` with a logging backend (and ``more`` on the worker's
    own classpath, cached as ``name``), resolved on first use."""
    return resolve_classpath(
        name or f"connect-{version}",
        [
            Artifact("org.apache.kafka", "connect-runtime", version),
            Artifact("org.slf4j", "slf4j-simple", "1.7.36"),
            *more,
        ],
    )


def worker_command(
    version: str = CONNECT_VERSION, classpath: Sequence[Path] | None = None
) -> list[str]:
    """``java`` with Connect's classpath (``classpath``: one :func:`connect_classpath` gave
    with more on it) and the distributed worker's class; its properties file comes last."""
    jars = connect_classpath(version) if classpath is None else classpath
    return [find_java(), *JVM_OPTIONS, *LOGGING, "-cp", ":".join(map(str, jars)), DISTRIBUTED]


def plugin_path(plugin: str) -> Path:
    """A ``plugin.path`` entry for ``plugin``: a directory as given (laid out as Connect's
    ``plugin.path`` expects), or Maven coordinates ``group:artifact:version`` resolved once
    into a directory of their jars."""
    if Path(plugin).is_dir():
        return Path(plugin).resolve()
    parts = plugin.split(":")
    if len(parts) != 3 or not all(parts):
        raise ConnectError(
            f"plugin {plugin!r} is neither a directory nor Maven coordinates group:artifact:version"
        )
    name = "connect-plugin-" + plugin.replace(":", "_")
    jars = resolve_classpath(name, [Artifact(*parts, exclude=PROVIDED)])
    return jars[0].parent.parent  # the entry holds libs/, one plugin's jars


def worker_properties(
    *,
    bootstrap: str,
    group: str,
    rest_port: int,
    plugins: Sequence[Path],
    client: Mapping[str, str],
    settings: Mapping[str, str],
) -> dict[str, str]:
    """A distributed worker's settings: its Connect group and internal topics named for
    ``group`` (the app's consumer group), REST on 127.0.0.1, JSON values with schemas, the
    incident's ``client`` settings for every consumer and producer it makes, then the team's
    own ``settings``."""
    cluster = connect_group(group)
    properties = {
        "bootstrap.servers": bootstrap,
        "group.id": cluster,
        "config.storage.topic": f"{cluster}-configs",
        "offset.storage.topic": f"{cluster}-offsets",
        "status.storage.topic": f"{cluster}-status",
        "config.storage.replication.factor": "-1",
        "offset.storage.replication.factor": "-1",
        "status.storage.replication.factor": "-1",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "listeners": f"http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(rest_port),
        "connector.client.config.override.policy": "All",
        "plugin.path": ",".join(str(path) for path in plugins),
    }
    for key, value in client.items():
        properties[f"consumer.{key}"] = value
        properties[f"producer.{key}"] = value
    properties.update(settings)
    return properties


def connect_group(group: str) -> str:
    """The Connect cluster's group for an app whose consumers are in ``group``: the same for
    every worker and restart, and never containing ``group`` (whose events the brokers' logs
    are searched for by name)."""
    return "connect-" + hashlib.sha256(group.encode()).hexdigest()[:16]


def write_properties(path: Path, properties: Mapping[str, str]) -> Path:
    """``properties`` as a Java properties file."""
    path.write_text("".join(properties_line(k, v) + "\n" for k, v in properties.items()))
    return path


def rest_answers(port: int) -> bool:
    """True once the worker's REST API answers (it does only after joining its group)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/connectors", timeout=2) as answer:
            return answer.status == 200
    except (OSError, urllib.error.URLError):
        return False


def put_connector(port: int, name: str, config: Mapping[str, Any], timeout: float = 60) -> None:
    """Create or update connector ``name`` (an idempotent PUT). Connect answers 409 while its
    group rebalances and 5xx while the leader is not known yet: asked again until ``timeout``;
    a config it refuses (400) is a :class:`ConnectError` with Connect's own words."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/connectors/{name}/config",
        data=json.dumps(dict(config)).encode(),
        headers={"Content-Type": "application/json"},
        method="PUT",
    )
    refusal = ""  # why the last try failed

    def taken() -> bool:
        nonlocal refusal
        try:
            with urllib.request.urlopen(request, timeout=30):
                return True
        except urllib.error.HTTPError as exc:
            said = exc.read().decode(errors="replace")
            refusal = f"Connect refused connector {name}: {exc.code} {said}"
            if exc.code not in (409, 500, 503):
                raise ConnectError(refusal) from None
        except OSError as exc:
            refusal = f"Connect did not take connector {name}: {exc}"
        return False

    wait_for(taken, timeout, lambda: refusal, every_s=0.5, error=ConnectError)


def connector_state(port: int, name: str) -> dict[str, Any] | None:
    """Connector ``name``'s status as the worker's REST API gives it (its state and each
    task's, with a failed task's trace); None when the worker does not answer it."""
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/connectors/{name}/status", timeout=5
        ) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return None


def connector_running(port: int, name: str, tasks: bool = True) -> bool:
    """True once connector ``name`` is RUNNING, and with ``tasks`` all its tasks (at least
    one): a connector with nothing to do yet may have none."""
    state = connector_state(port, name)
    if state is None or state.get("connector", {}).get("state") != "RUNNING":
        return False
    running = [task.get("state") == "RUNNING" for task in state.get("tasks") or []]
    return not tasks or (bool(running) and all(running))
