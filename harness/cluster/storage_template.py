"""Kafka's storage format, run once per version and broker config, then copied to each node.

``kafka.tools.StorageTool format`` is a JVM of its own and costs a second or more of every
start. What it writes is the same for every node of every cluster of one Kafka version and
config and feature levels (the bootstrap metadata), except ``meta.properties``, which holds
the node id, the cluster id and the directory id. So the harness formats a template once, caches
it, and gives each node a copy with its own ``meta.properties``.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafka_replay.file_lock import file_lock
from kafka_replay.servers.paths import cache_root
from kafka_replay.servers.server_log import read_tail

from . import broker_config
from .errors import BrokerStartError
from .nodes import START_TIMEOUT_S, refused_config

META = "meta.properties"
#: The cluster id the template is formatted with; each node's ``meta.properties`` replaces it.
PLACEHOLDER_CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAA"
#: Written last into a template: a directory with it is complete.
COMPLETE = ".complete"


def template_key(
    version: str, properties: Mapping[str, str], features: Mapping[str, int] | None = None
) -> str:
    """Templates differ by Kafka version, by the config that is not node wiring and by the
    feature levels set at format."""
    settings = {k: v for k, v in properties.items() if k not in broker_config.RESERVED_KEYS}
    text = broker_config.render_properties(dict(sorted(settings.items())))
    text += " ".join(format_options(features or {}))
    return f"kafka-{version}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def formatted_template(
    version: str,
    jvm: Sequence[str],
    properties: Mapping[str, str],
    log_path: Path,
    features: Mapping[str, int] | None = None,
) -> Path:
    """The cached storage of a formatted node for this version and config, made on first use.

    ``properties`` is one node's full config; its wiring (ports, log.dirs) does not matter.
    ``features``: feature levels to format with (``transaction.version``), over the release's
    own. The formatter's output goes to ``log_path`` (the node's log); Kafka refusing the
    config or a level raises :class:`BrokerStartError` with Kafka's own words and that log's
    tail.
    """
    root = cache_root() / "storage"
    target = root / template_key(version, properties, features)
    if (target / COMPLETE).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f"{target.name}.lock"):
        if (target / COMPLETE).is_file():
            return target
        with tempfile.TemporaryDirectory(prefix=".format-", dir=root) as work:
            data = Path(work) / "data"
            config = Path(work) / "node.properties"
            config.write_text(
                broker_config.render_properties({**properties, "log.dirs": str(data)})
            )
            _format(version, jvm, config, log_path, features or {})
            (data / META).unlink()
            (data / COMPLETE).touch()
            shutil.rmtree(target, ignore_errors=True)
            data.rename(target)
    return target


def install(
    template: Path, node_dir: Path, cluster_id: str, node_id: int, directory_id: str
) -> None:
    """Give one node a formatted storage directory of its own."""
    shutil.copytree(template, node_dir, ignore=shutil.ignore_patterns(COMPLETE))
    (node_dir / META).write_text(
        f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\ndirectory.id={directory_id}\n"
    )


def format_options(features: Mapping[str, int]) -> list[str]:
    """The formatter's options that set these feature levels."""
    return [
        part
        for name, level in sorted(features.items())
        for part in ("--feature", f"{name}={level}")
    ]


def _format(
    version: str, jvm: Sequence[str], config: Path, log_path: Path, features: Mapping[str, int]
) -> None:
    command = [
        *jvm,
        "kafka.tools.StorageTool",
        "format",
        "-t",
        PLACEHOLDER_CLUSTER_ID,
        "-c",
        str(config),
        *format_options(features),
    ]
    with log_path.open("ab") as output:
        try:
            returncode = subprocess.run(
                command, stdout=output, stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S
            ).returncode
        except subprocess.TimeoutExpired as exc:
            raise BrokerStartError(
                f"Kafka {version} did not format storage within {START_TIMEOUT_S:.0f}s; "
                f"log {log_path}"
            ) from exc
    if returncode != 0:
        tail = read_tail(log_path, 40)
        raise BrokerStartError(
            f"Kafka {version} could not format storage (exit {returncode}); "
            f"{refused_config(tail)}log {log_path}:\n{tail}"
        )
