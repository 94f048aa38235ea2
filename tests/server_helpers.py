"""Helpers the tests of leased servers share (PostgreSQL, the schema registry): a port taken
before the server binds it, and an owner killed with -9 while its server runs."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafka_replay.waiting import wait_for


@contextlib.contextmanager
def port_taken_first(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, count: int = 1
) -> Iterator[int]:
    """Have ``module.free_ports``, asked once for ``count`` ports, hand out first one that a
    listening socket holds, as if another process took it after we chose it; yields it."""
    free_ports = module.free_ports
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        handed = iter([[taken, *free_ports(count - 1)]])
        monkeypatch.setattr(module, "free_ports", lambda n: next(handed, None) or free_ports(n))
        yield taken


def killed_owner(setup: str, state_dir: Path, what: str, timeout: float = 60) -> Any:
    """Run ``setup`` in a child Python and SIGKILL it (no clean-up of its own, as in a crash)
    once it has started what it owns and put it in its variable ``state``; returns ``state``.

    ``setup`` is Python source; ``state`` must be JSON. ``what`` names what it starts, for
    the failure when it is not ready within ``timeout`` seconds.
    """
    ready = state_dir / "owner-state.json"
    script = textwrap.dedent(setup) + textwrap.dedent(
        f"""
        import json as _json, os as _os, threading as _threading
        from pathlib import Path as _Path

        _Path({str(ready)!r} + ".part").write_text(_json.dumps(state))
        _os.replace({str(ready)!r} + ".part", {str(ready)!r})
        _threading.Event().wait()
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", script])

    def owner_ready() -> bool:
        if ready.exists():
            return True
        assert owner.poll() is None, f"the owner exited with {owner.returncode}"
        return False

    unready = f"the owner's {what} was not ready in {timeout:.0f}s"
    try:
        wait_for(owner_ready, timeout, unready, error=AssertionError)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
    return json.loads(ready.read_text())
