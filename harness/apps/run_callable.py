"""Runs an app given as ``module:function`` in a process of its own.

The function is called with the :class:`~kafka_replay.apps.contract.AppContext` when it takes an
argument, and with none otherwise (it can then read the contract's environment variables).
"""

from __future__ import annotations

import inspect
import sys

from kafka_replay.apps.contract import AppContext, load_callable


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kafka_replay.apps.run_callable module:function", file=sys.stderr)
        return 2
    sys.path.insert(0, "")  # the user's modules, relative to where the run started
    function = load_callable(argv[0])
    wants_context = bool(inspect.signature(function).parameters)
    result = function(AppContext.from_env()) if wants_context else function()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
