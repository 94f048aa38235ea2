"""What every server the harness starts shares: started, it serves; stopped, nothing of it is
left; and as a context manager it is stopped whatever happens in between (testcontainers' one
generic container is the model: each server only says how it starts and stops)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Server(ABC):
    """A server: :meth:`start` returns it once it serves (a server already started is
    returned as it is); :meth:`stop` ends it and is safe to call twice, and after a start that
    failed halfway."""

    @abstractmethod
    def start(self) -> Self: ...

    @abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
