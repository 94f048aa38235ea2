"""What every local server the harness starts stands on: processes and their logs, free ports,
leases and the reaper, Maven artifacts, JVMs, Docker images and containers.

Kafka's brokers (:mod:`kafka_replay.cluster`), the run's PostgreSQL (:mod:`kafka_replay.sinks`),
the schema registry, Spark and the apps all start their processes and containers here. This
room knows nothing of Kafka, nor of the rest of the harness: it imports only the small shared
utilities (:mod:`kafka_replay.file_lock`, :mod:`kafka_replay.lazy`).

Names are imported on first use, so a light part of this package never pays for the heavy
ones (the Docker SDK, testcontainers).
"""

from __future__ import annotations

from kafka_replay.lazy import lazy_exports

_EXPORTS = {
    "Artifact": ".maven",
    "ArtifactResolutionError": ".server_errors",
    "DockerUnavailable": ".server_errors",
    "Lease": ".reaper",
    "ServerError": ".server_errors",
    "ServerLog": ".server_log",
    "cache_root": ".paths",
    "docker_client": ".docker",
    "find_java": ".jvm",
    "free_ports": ".ports",
    "leased_temp_dir": ".reaper",
    "reap_containers": ".docker",
    "reap_orphans": ".reaper",
    "resolve_classpath": ".maven",
    "spawn": ".process",
    "spawn_in_group": ".process",
    "wait_answering": ".process",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
