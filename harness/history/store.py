"""The run directory: append-only JSON-lines streams that survive a crash of any writer.

Each stream is one file, ``events/<name>.jsonl``, one JSON object per line. Every append is a
single ``write`` on a file opened with ``O_APPEND``, so lines from several processes never
interleave, and a crash can at worst leave one unterminated last line, which readers skip.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

EVENTS = "events"
LOGS = "logs"
META = "run.json"
#: The files beside ``events/`` that a finished run's check leaves (see docs/history.md).
CHECK = "check.json"
SIDE_EFFECTS_CHECK = "check-side-effects.json"
#: With a ``[sink]`` as well as an output topic: the topic's check (``check.json`` is the table's).
OUTPUT_TOPIC_CHECK = "check-output-topic.json"
#: Where a run's results land in more than one place: every place's check, by name.
PLACE_CHECKS = "checks.json"
#: A pipeline's: each service's checks on its own, by service, upstream first.
HOP_CHECKS = "hops.json"
DELIVERIES = "deliveries.jsonl"
OUTCOME = "outcome.json"
#: An instrumented app instance's stream: ``app-<instance>``.
APP_PREFIX = "app-"


class EventStream:
    """Appends events to one stream; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()

    def append(self, event: dict[str, Any]) -> None:
        """Write ``event`` as one line, stamped with wall-clock ``ts`` (seconds) if it has none."""
        line = json.dumps({"ts": time.time(), **event}, separators=(",", ":"), default=str)
        with self._lock:
            os.write(self._fd, (line + "\n").encode())

    __call__ = append

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read_stream(path: Path) -> list[dict[str, Any]]:
    """Every complete event in a stream file, in the order written."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
    return events


class RunHistory:
    """One directory per run holding everything a checker and a human need."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.root = Path(root)
        if create:
            (self.root / EVENTS).mkdir(parents=True, exist_ok=True)
            (self.root / LOGS).mkdir(parents=True, exist_ok=True)
        self._streams: dict[str, EventStream] = {}

    @classmethod
    def existing(cls, root: Path) -> RunHistory:
        """A finished run's history, to read: nothing is created in its directory (a report
        read back may sit where it must not change)."""
        return cls(root, create=False)

    @classmethod
    def new_run(cls, root: Path) -> RunHistory:
        """The history of a new run in ``root``: an earlier run's history there (a report
        directory used again) is removed first, so the new run's streams never add to it."""
        root = Path(root)
        if (root / META).exists() or (root / EVENTS).is_dir():
            shutil.rmtree(root)
        elif root.is_dir() and any(root.iterdir()):
            raise ValueError(
                f"{root} holds files that are not a run's history; "
                "give the run a report directory of its own"
            )
        return cls(root)

    @property
    def logs_dir(self) -> Path:
        return self.root / LOGS

    @property
    def events_dir(self) -> Path:
        """Where the streams live (an instrumented app writes its own there)."""
        return self.root / EVENTS

    def stream_path(self, name: str) -> Path:
        return self.root / EVENTS / f"{name}.jsonl"

    def stream(self, name: str) -> EventStream:
        """The writer for ``events/<name>.jsonl`` (one per name per process)."""
        if name not in self._streams:
            self._streams[name] = EventStream(self.stream_path(name))
        return self._streams[name]

    def read(self, name: str) -> list[dict[str, Any]]:
        return read_stream(self.stream_path(name))

    def stream_names(self) -> list[str]:
        return sorted(p.stem for p in (self.root / EVENTS).glob("*.jsonl"))

    def app_stream_names(self) -> list[str]:
        """The instrumented app instances' streams (``app-<instance>``)."""
        return [name for name in self.stream_names() if name.startswith(APP_PREFIX)]

    def read_json(self, name: str) -> dict[str, Any] | None:
        """A JSON file of the run directory (``check.json``, say); None when absent or
        unreadable, as a run that broke before writing it leaves it."""
        try:
            return dict(json.loads((self.root / name).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def read_lines(self, name: str) -> list[dict[str, Any]] | None:
        """A JSON-lines file of the run directory (``deliveries.jsonl``); None when absent."""
        path = self.root / name
        return read_stream(path) if path.exists() else None

    def write_meta(self, **fields: Any) -> None:
        """Merge ``fields`` into ``run.json`` (what ran, where, with which settings)."""
        path = self.root / META
        meta = json.loads(path.read_text()) if path.exists() else {}
        meta.update(fields)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(meta, indent=2, default=str))
        temporary.replace(path)

    def meta(self) -> dict[str, Any]:
        path = self.root / META
        return json.loads(path.read_text()) if path.exists() else {}

    def keep_logs(self, files: list[str]) -> None:
        """Copy logs written elsewhere (a shared broker's, say) into ``logs/``."""
        for file in map(Path, files):
            if file.is_file():
                shutil.copyfile(file, self.logs_dir / file.name)

    def close(self) -> None:
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()
