"""What the person running the catalog chose for a run, over the definition's defaults.

One value, made by the run settings (:mod:`kafka_replay.replay.settings`) from the command line,
compare or pytest, and read by every part of a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafka_replay.definitions.app_option import GivenApp
from kafka_replay.definitions.model import Profile


@dataclass(frozen=True)
class RunOptions:
    """What the person running the catalog chose, over the definition's defaults."""

    #: the user's app: a command line or module:function (``[NAME=]COMMAND``), read once
    app: GivenApp | None = None
    #: the user's app as a container image (``[NAME=]IMAGE``); ``app``: its arguments
    app_image: GivenApp | None = None
    output_id: str | None = None  # module:function(OutputRecord) -> event_id
    #: a ``--payload`` file: a team's messages in every workload's records
    payload: Path | None = None
    #: an ``--expect`` file: what the user's app makes of each input, and the topics it writes
    expect: Path | None = None
    #: a PostgreSQL database of the user's for incidents with a ``[sink]`` (the run owns one
    #: schema there); None: a server of the run's own
    database_url: str | None = None
    guarantee: str | None = None  # what the user's app declares
    group_protocol: str | None = None  # classic or consumer (KIP-848)
    restart: str | None = None  # the app's restart policy (default: the definition's)
    #: ``confluent-kafka==V`` (Python apps run with it, the harness keeps its own) or
    #: ``kafka-clients==V`` (the JVM reference apps run on it).
    client_library: str | None = None
    #: Client and broker settings put over the profile's ("we changed our consumer config").
    client: Mapping[str, Any] = field(default_factory=dict)
    broker: Mapping[str, Any] = field(default_factory=dict)
    #: The longest to wait for open transactions before the check (default: as long as the
    #: app's transaction timeout lets one last; see ``settle_timeout_s``).
    settle_timeout_s: float | None = None
    #: Every run setting as chosen (see :mod:`.settings`), recorded in ``run.json``.
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # as the settings and a test give them: the option's text, read here once
        for name, flag in (("app", "--app"), ("app_image", "--app-image")):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, GivenApp.read(flag, value))

    @property
    def users_app(self) -> bool:
        """The user's app runs (a command, a callable or an image), not the reference app."""
        return bool(self.app or self.app_image)

    def apply(self, profile: Profile) -> Profile:
        """The profile with these settings over its own."""
        if not self.client and not self.broker:
            return profile
        return replace(
            profile,
            client={**profile.client, **self.client},
            broker={**profile.broker, **self.broker},
        )
