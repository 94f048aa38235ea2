"""Where librdkafka's own log lines go: one logger for every client the harness makes, with
repeats folded.

A client that cannot reach a broker a run took down says so on every reconnect attempt, many
times a second; the first line says it all. :class:`FoldRepeats` lets a line through once per
``window_s`` for each client and message (the times in it aside).
"""

from __future__ import annotations

import logging
import re
import time

#: librdkafka's own log lines go here instead of raw stderr.
client_log = logging.getLogger("kafka_replay.librdkafka")

#: What changes between two reports of one failure: how long it took, how many were suppressed.
_VOLATILE = re.compile(r"\(after \d+ms in state \w+(, \d+ identical error\(s\) suppressed)?\)")


class FoldRepeats(logging.Filter):
    """Drops a line that repeats one let through less than ``window_s`` seconds ago."""

    def __init__(self, window_s: float = 30.0) -> None:
        super().__init__()
        self.window_s = window_s
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = _VOLATILE.sub("", record.getMessage())
        now = time.monotonic()
        if now - self._last.get(key, -self.window_s) < self.window_s:
            return False
        if len(self._last) > 1000:  # a long session: forget the old lines
            self._last.clear()
        self._last[key] = now
        return True


client_log.addFilter(FoldRepeats())
