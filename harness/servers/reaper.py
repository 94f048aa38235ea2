"""Crash-safe cleanup of server processes and their data directories.

Every server (a Kafka cluster, a database, a Spark master) takes out a *lease*: a small JSON
file naming the process that owns it, the processes it started, the directories it made and
the Docker containers it started (an app's image: the daemon's children, which no signal to the
owner's processes reaches). Normal teardown removes the lease. If the owner dies without
tearing down (kill -9, a crash), the next start finds leases whose owner is gone and reaps what
they list. A process is only killed when its environment still carries the lease's token, so a
recycled pid is never touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from .paths import registry_dir

log = logging.getLogger(__name__)

LEASE_ENV = "KAFKA_REPLAY_LEASE"


def _started_at(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


@dataclass
class Lease:
    """What one owner process has started, kept on disk until it is cleaned up."""

    token: str
    owner_pid: int
    owner_started: float | None
    pids: list[int] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    #: Docker containers (ids): the daemon's children, which outlive a killed owner.
    containers: list[str] = field(default_factory=list)

    @classmethod
    def take(cls) -> Lease:
        pid = os.getpid()
        lease = cls(token=secrets.token_hex(8), owner_pid=pid, owner_started=_started_at(pid))
        lease._save()
        return lease

    @property
    def path(self) -> Path:
        return registry_dir() / f"{self.token}.json"

    def add_process(self, pid: int) -> None:
        self.pids.append(pid)
        self._save()

    def add_container(self, container_id: str) -> None:
        self.containers.append(container_id)
        self._save()

    def add_dir(self, path: Path) -> None:
        self.dirs.append(str(path))
        self._save()

    def release(self) -> None:
        """Remove the lease's directories and the lease itself (processes are already stopped)."""
        for directory in self.dirs:
            shutil.rmtree(directory, ignore_errors=True)
        self.path.unlink(missing_ok=True)

    def owner_alive(self) -> bool:
        started = _started_at(self.owner_pid)
        return started is not None and started == self.owner_started

    def reap(self) -> list[int]:
        """Kill this lease's surviving processes, remove its dirs; return the pids killed."""
        killed = [pid for pid in self.pids if _kill_if_tagged(pid, self.token)]
        if self.containers:
            _remove_containers(self.containers)
        self.release()
        return killed

    def _save(self) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(self)))
        temporary.replace(self.path)


def _kill_if_tagged(pid: int, token: str) -> bool:
    """SIGKILL ``pid`` (and its process group, if it leads one) if the lease tagged it."""
    try:
        process = psutil.Process(pid)
        if process.environ().get(LEASE_ENV) != token:
            return False
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            process.kill()
        process.wait(timeout=10)
        return True
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.Error as exc:
        log.warning("could not reap process %s: %s", pid, exc)
        return False


def _remove_containers(ids: list[str]) -> None:
    """Force-remove the containers a dead owner started (gone ones are skipped)."""
    try:  # the Docker SDK itself: servers.docker reads leases, so it cannot be used here
        import docker

        client = docker.from_env(timeout=30)
    except Exception as exc:
        log.warning("could not remove the containers %s: %s", ", ".join(ids), exc)
        return
    for container_id in ids:
        with contextlib.suppress(Exception):
            client.containers.get(container_id).remove(force=True)
            log.warning("Removed container %s a crashed run left", container_id[:12])


def lease_is_live(token: str) -> bool:
    """True while the lease ``token`` exists and its owner is running."""
    lease = _load(registry_dir() / f"{token}.json")
    return lease is not None and lease.owner_alive()


def _load(path: Path) -> Lease | None:
    try:
        return Lease(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def reap_orphans() -> list[int]:
    """Clean up after owners that died without tearing down; return the pids killed."""
    killed: list[int] = []
    for path in registry_dir().glob("*.json"):
        lease = _load(path)
        if lease is None:  # unreadable: written by nobody we can trust
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if lease.owner_alive():
            continue
        pids = lease.reap()
        if pids or lease.dirs:
            log.warning("Reaped what a crashed run left: pids %s, %d dir(s)", pids, len(lease.dirs))
        killed.extend(pids)
    return killed


@contextlib.contextmanager
def leased_temp_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory that the next run removes if this process is killed with it.

    ``tempfile.TemporaryDirectory`` cleans up on any exit Python sees, but not after SIGKILL;
    a lease names the directory so :func:`reap_orphans` can.
    """
    reap_orphans()
    lease = Lease.take()
    try:
        path = Path(tempfile.mkdtemp(prefix=prefix))
        lease.add_dir(path)
        yield path
    finally:
        lease.release()
