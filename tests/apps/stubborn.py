"""The reference batch forwarder, except that it ignores SIGTERM, as a hung shutdown would.

``python -m tests.apps.stubborn [batch_forwarder options]``: only SIGKILL stops it, so the
supervisor must kill it once its grace period is over.
"""

from __future__ import annotations

import signal
import sys

from kafka_replay_incidents.apps import batch_forwarder

_install = signal.signal


def _ignore_sigterm(signum: int, handler: object) -> object:
    """Every handler is installed as asked, except that SIGTERM stays ignored."""
    return _install(signum, signal.SIG_IGN if signum == signal.SIGTERM else handler)  # type: ignore[arg-type]


if __name__ == "__main__":
    signal.signal = _ignore_sigterm  # type: ignore[assignment]
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(batch_forwarder.main(sys.argv[1:]))
