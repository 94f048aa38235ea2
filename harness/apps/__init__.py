"""The application under test: the contract, the supervisor that runs it, and instrumentation."""

from .contract import AppContext, AppSpec, load_callable
from .correlation import OutputRecord, default_event_id, load_extractor
from .instrument import Reporter
from .supervisor import AppCrashLoop, AppStartError, RestartPolicy, Supervisor

__all__ = [
    "AppContext",
    "AppCrashLoop",
    "AppSpec",
    "AppStartError",
    "OutputRecord",
    "Reporter",
    "RestartPolicy",
    "Supervisor",
    "default_event_id",
    "load_callable",
    "load_extractor",
]
