"""Errors the servers room raises, each carrying what a user needs to act on it."""

from __future__ import annotations


class ServerError(RuntimeError):
    """Base class for what goes wrong while starting a local server or what it stands on (a
    JVM, Maven's jars, Docker, a tool the harness builds)."""


class ArtifactResolutionError(ServerError):
    """Java artifacts could not be resolved from Maven."""


class DockerUnavailable(ServerError):
    """No Docker daemon answers; the message says how to get one."""
