"""The application under test: the contract, the supervisor that runs it, and instrumentation.

It stands on :mod:`kafka_replay.servers` (processes, images, JVMs), writes what apps did into
:mod:`kafka_replay.history`, and gives a JVM app its database's driver
(:mod:`kafka_replay.sinks`); no other room of the harness but the small shared utilities.

Names are imported on first use, so the contract's constants never pay for Kafka clients.
"""

from __future__ import annotations

from kafka_replay.lazy import lazy_package

__all__, __getattr__ = lazy_package(
    __name__,
    {
        ".contract": "AppContext AppSpec load_callable",
        ".correlation": "OutputRecord default_event_id load_extractor",
        ".instrument": "Reporter",
        ".supervisor": "AppStartError RestartPolicy Supervisor parse_restart",
    },
)
