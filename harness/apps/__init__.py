"""The application under test: the contract, the supervisor that runs it, and instrumentation.

It stands on :mod:`kafka_replay.servers` (processes, images, JVMs), writes what apps did into
:mod:`kafka_replay.history`, and gives a JVM app its database's driver
(:mod:`kafka_replay.sinks`); no other room of the harness but the small shared utilities.

Names are imported on first use, so the contract's constants never pay for Kafka clients.
"""

from __future__ import annotations

from kafka_replay.lazy import lazy_exports

_EXPORTS = {
    "AppContext": ".contract",
    "AppSpec": ".contract",
    "AppStartError": ".supervisor",
    "OutputRecord": ".correlation",
    "Reporter": ".instrument",
    "RestartPolicy": ".supervisor",
    "Supervisor": ".supervisor",
    "default_event_id": ".correlation",
    "load_callable": ".contract",
    "load_extractor": ".correlation",
    "parse_restart": ".supervisor",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
