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

from kafka_replay.lazy import lazy_package

__all__, __getattr__ = lazy_package(
    __name__,
    {
        ".docker": "docker_client reap_containers",
        ".jvm": "find_java",
        ".maven": "Artifact resolve_classpath",
        ".paths": "cache_root",
        ".ports": "free_ports",
        ".process": "spawn spawn_in_group wait_answering",
        ".reaper": "Lease leased_temp_dir reap_orphans",
        ".server_errors": "ArtifactResolutionError DockerUnavailable ServerError",
        ".server_log": "ServerLog",
    },
)
