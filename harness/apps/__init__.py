"""The application under test: the contract, the supervisor that runs it, and instrumentation.

Names are imported on first use, so the contract's constants never pay for Kafka clients.
"""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
