"""The run's database on the container backend: PostgreSQL in a container of a local image.

The image is built from Debian's packages with no registry, as the Kafka image is; the tests
skip, saying how to get one, when no Docker daemon answers. What the container holds to as the
machine's own server does (its URLs, settings, start and failures) is tested on both kinds in
``test_postgres.py``; here is what only a container does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_replay.cluster import choose_version
from kafka_replay.cluster.pool import ClusterPool
from kafka_replay.definitions.definition import load_incident
from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.runner import run_incident
from kafka_replay.servers.docker import (
    DEBIAN_IMAGE,
    IMAGE_LABEL,
    LEASE_LABEL,
    RECIPE_LABEL,
    docker_client,
    reap_containers,
)
from kafka_replay.sinks import postgres_image
from kafka_replay.sinks.container_postgres import ContainerPostgres
from kafka_replay.sinks.database import PostgresError
from kafka_replay.sinks.postgres_image import POSTGRES_IMAGE, build_postgres_image, recipe
from tests.server_helpers import killed_owner

needs_docker = pytest.mark.usefixtures("docker_available")


@pytest.fixture(scope="module")
def docker_available() -> None:
    if (reason := ContainerPostgres.unavailable()) is not None:
        pytest.skip(f"no Docker daemon for PostgreSQL in a container: {reason}")


def _containers(token: str) -> list[str]:
    """Every container, running or not, that carries the lease ``token``'s label."""
    found = docker_client().containers.list(all=True, filters={"label": f"{LEASE_LABEL}={token}"})
    return [container.name for container in found]


@needs_docker
def test_the_image_is_built_once_from_the_local_debian_image() -> None:
    client = docker_client()
    image = client.images.get(build_postgres_image())
    assert build_postgres_image() == POSTGRES_IMAGE
    assert client.images.get(POSTGRES_IMAGE).id == image.id  # the second build did nothing
    assert image.labels[IMAGE_LABEL] == "postgres"
    assert image.labels[RECIPE_LABEL] == recipe()
    layers = {entry["Id"] for entry in image.history()}
    assert client.images.get(DEBIAN_IMAGE).id in layers


@needs_docker
def test_stop_removes_the_container_and_keeps_its_log(tmp_path: Path) -> None:
    database = ContainerPostgres(tmp_path).start()
    assert database.lease is not None
    token = database.lease.token
    assert _containers(token) == [database.name]

    database.stop()
    assert _containers(token) == []
    assert database.lease is None
    assert (
        "database system is ready to accept connections" in (tmp_path / "postgres.log").read_text()
    )
    database.stop()  # a second stop does nothing


@needs_docker
def test_a_crashed_owners_container_is_reaped(tmp_path: Path) -> None:
    state = killed_owner(
        f"""
        from pathlib import Path
        from kafka_replay.sinks.container_postgres import ContainerPostgres

        database = ContainerPostgres(Path({str(tmp_path)!r})).start()
        state = {{"token": database.lease.token, "name": database.name}}
        """,
        tmp_path,
        "container",
        timeout=120,
    )
    assert _containers(state["token"]) == [state["name"]]  # a crash leaves it running

    assert state["name"] in reap_containers()  # what the next start of a container does first
    assert _containers(state["token"]) == []


def test_no_docker_daemon_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    assert "no Docker daemon is reachable" in (ContainerPostgres.unavailable() or "")
    database = ContainerPostgres(tmp_path)
    with pytest.raises(PostgresError, match="no Docker daemon is reachable") as failed:
        database.start()
    assert "dockerd --bridge=none --iptables=false" in str(failed.value)
    assert "--database-url" in str(failed.value)
    assert database.lease is None and not (tmp_path / "postgres.log").exists()


@needs_docker
def test_an_image_that_cannot_be_built_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = "kafka-replay/postgres-broken:test"  # never the real tag
    monkeypatch.setattr(postgres_image, "POSTGRES_IMAGE", broken)
    monkeypatch.setattr(
        postgres_image, "DOCKERFILE", f"FROM {DEBIAN_IMAGE}\nRUN echo no postgres here; exit 3\n"
    )
    with pytest.raises(PostgresError, match="cannot build") as failed:
        ContainerPostgres(tmp_path).start()
    message = str(failed.value)
    assert "no postgres here" in message and "--database-url" in message
    client = docker_client()
    assert not postgres_image.built_by(client, broken, postgres_image.recipe())
    steps = client.containers.list(
        all=True, filters={"ancestor": DEBIAN_IMAGE}, ignore_removed=True
    )
    commands = [" ".join(step.attrs["Config"]["Cmd"] or []) for step in steps]
    assert not [command for command in commands if "no postgres here" in command]  # forcerm


@needs_docker
def test_a_run_on_the_container_backend_has_its_database_in_a_container(
    kafka_cluster_pool: ClusterPool,
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Brokers and the database both in containers: the rows are judged as on the embedded
    backend, and no container of the run's is left."""
    client = docker_client()
    role = {"label": "kafka-replay.role=postgres"}
    before = {c.name for c in client.containers.list(all=True, filters=role)}  # other tests'
    started: list[str] = []
    real_start = ContainerPostgres.start

    def start(self: ContainerPostgres) -> ContainerPostgres:
        started.append(real_start(self).url)
        return self

    monkeypatch.setattr(ContainerPostgres, "start", start)
    definition = Path(__file__).parent / "sink_incidents" / "rows-and-topic.toml"
    outcome = run_incident(
        load_incident(definition),
        "remediated",
        cluster_for=kafka_cluster_pool.cluster_for(choose_version(None), "container"),
        spark=lambda: spark,
        run_dir=tmp_path / "run",
        options=RunOptions(),
    )
    assert outcome.outputs["table results"]["anomalies"]["duplicate"] == 30, outcome.explain()
    assert len(started) == 1  # the run's database was the container's
    assert (tmp_path / "run" / "logs" / "postgres.log").stat().st_size  # the container's log
    assert {c.name for c in client.containers.list(all=True, filters=role)} <= before
