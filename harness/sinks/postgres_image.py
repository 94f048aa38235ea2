"""The PostgreSQL image the container backend runs a run's database from, built with no registry.

``kafka-replay/postgres:bookworm`` is built the way every local image is (see
:mod:`kafka_replay.servers.docker`): ``FROM`` the local ``kafka-replay/debian:bookworm``, made
with debootstrap when missing and never pulled, then Debian's ``postgresql`` package from the
mirror that root filesystem was made from. Its entrypoint makes a throw-away cluster at each
start of a container (trust for 127.0.0.1 only) and runs ``postgres`` with the settings the
container is given. An image with the current recipe label is reused; building is serialised
with the Kafka images' builds by the same file lock.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path
from typing import Any

from kafka_replay.servers.docker import (
    DEBIAN_IMAGE,
    IMAGE_LABEL,
    RECIPE_LABEL,
    Progress,
    build_lock,
    built_by,
    debian_base,
    docker_build,
    docker_client,
)

log = logging.getLogger(__name__)

POSTGRES_IMAGE = "kafka-replay/postgres:bookworm"
#: Where the image's entrypoint makes the cluster (the container's own layer).
DATA_DIR = "/var/lib/postgresql/data"

#: postgresql-common first, so that installing the server makes no ``main`` cluster.
DOCKERFILE = f"""\
FROM {DEBIAN_IMAGE}
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      postgresql-common >/dev/null \\
 && sed -ri 's/^#? *create_main_cluster *=.*/create_main_cluster = false/' \\
      /etc/postgresql-common/createcluster.conf \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      postgresql >/dev/null \\
 && ln -s "$(ls -d /usr/lib/postgresql/*/bin)" /usr/lib/postgresql/bin \\
 && rm -rf /var/lib/apt/lists/*
COPY entrypoint.sh /usr/local/bin/kafka-replay-postgres
USER postgres
ENTRYPOINT ["/usr/local/bin/kafka-replay-postgres"]
"""

#: ``$POSTGRES_USER`` is the superuser; the container's arguments go to ``postgres``.
ENTRYPOINT = f"""\
#!/bin/sh
# kafka-replay's PostgreSQL: a throw-away cluster made when the container starts, trusting
# connections from 127.0.0.1 only; the arguments are the server's settings (-c port=...).
set -eu
data={DATA_DIR}
bin=/usr/lib/postgresql/bin
if [ ! -s "$data/PG_VERSION" ]; then
  "$bin/initdb" --pgdata="$data" --username="${{POSTGRES_USER:-replay}}" --encoding=UTF8 \\
    --locale=C --auth=trust --no-sync --no-instructions
  printf '%s\\n' '# written by kafka-replay: a test database, for this machine only' \\
    'local all all trust' 'host  all all 127.0.0.1/32 trust' >"$data/pg_hba.conf"
fi
exec "$bin/postgres" -D "$data" "$@"
"""


def recipe() -> str:
    """What the PostgreSQL image is made of, as a short digest (its recipe label)."""
    return hashlib.sha256((DOCKERFILE + ENTRYPOINT).encode()).hexdigest()[:16]


def build_postgres_image(progress: Progress = log.warning) -> str:
    """Build :data:`POSTGRES_IMAGE` (a no-op when it exists with this recipe); return its tag.

    :class:`~kafka_replay.servers.server_errors.DockerUnavailable` when no daemon answers,
    :class:`~kafka_replay.servers.server_errors.ServerError` when the image cannot be built.
    """
    client = docker_client()
    if built_by(client, POSTGRES_IMAGE, recipe()):
        return POSTGRES_IMAGE
    with build_lock():
        if not built_by(client, POSTGRES_IMAGE, recipe()):
            _build(client, progress)
    return POSTGRES_IMAGE


def _build(client: Any, progress: Progress) -> None:
    debian_base(client, progress)
    with tempfile.TemporaryDirectory(prefix="kafka-replay-image-") as context:
        root = Path(context)
        (root / "Dockerfile").write_text(DOCKERFILE)
        (root / "entrypoint.sh").write_text(ENTRYPOINT)
        (root / "entrypoint.sh").chmod(0o755)
        progress(f"Building {POSTGRES_IMAGE}: PostgreSQL from Debian's packages")
        labels = {IMAGE_LABEL: "postgres", RECIPE_LABEL: recipe()}
        docker_build(client, root, POSTGRES_IMAGE, labels)
