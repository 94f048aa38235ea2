"""A proxy in front of each broker that reads Kafka's framing, to aim a fault at a request.

A TCP-level fault (a reset, latency) hits whatever bytes happen to be in flight, so whether it
catches a Produce before or after the broker appended it is chance. This proxy sees each
request's API, version, correlation id and client id (:mod:`.kafka_wire`) and acts on the ones
a :class:`RequestFault` chooses: it loses a request's answer after the broker acted on it
(the connection is reset when the answer arrives), delays the request, or cuts the connection
before forwarding it. Every action is recorded (:attr:`RequestProxy.actions`).

It runs on its own event loop in a daemon thread of the process that started it, so nothing
outlives that process; the brokers advertise its ports, so clients cannot go around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .kafka_wire import (
    FrameError,
    RequestHeader,
    api_keys,
    parse_request_header,
    read_frame,
    response_correlation_id,
)
from .kafka_wire import frame as framed

log = logging.getLogger(__name__)

#: What a fault does to a request it chose.
ACTIONS = ("lose_answer", "delay", "cut")
START_TIMEOUT_S = 10.0


class RequestProxyError(RuntimeError):
    """The proxy could not listen or was asked for a fault it cannot do."""


@dataclass
class RequestFault:
    """Which requests to act on, and what to do to them.

    ``api``: the API's name as Kafka's docs write it (``Produce``); ``clients``: client-id
    prefixes (empty: every client); of the matching requests, those from the ``nth`` (1-based)
    on, every ``every``-th, at most ``count`` of them (None: no limit).
    """

    api: str
    action: str
    clients: tuple[str, ...] = ()
    nth: int = 1
    every: int = 1
    count: int | None = 1
    delay_ms: int = 0
    brokers: frozenset[str] | None = None  # the proxies (``broker-N``) it acts on; None: all
    matched: int = field(default=0, init=False)
    acted: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.api not in api_keys():
            raise RequestProxyError(f"api {self.api!r} is not an API of the Kafka protocol")
        if self.action not in ACTIONS:
            raise RequestProxyError(f"action {self.action!r} is not one of {', '.join(ACTIONS)}")
        if self.nth < 1 or self.every < 1 or (self.count is not None and self.count < 1):
            raise RequestProxyError("nth, every and count must be at least 1")
        self.api_key = api_keys()[self.api]

    def chooses(self, broker: str, header: RequestHeader) -> bool:
        """Whether this request is one to act on (counting it when it matches)."""
        if header.api_key != self.api_key:
            return False
        if self.brokers is not None and broker not in self.brokers:
            return False
        if self.clients and not (header.client_id or "").startswith(self.clients):
            return False
        self.matched += 1
        if self.count is not None and self.acted >= self.count:
            return False
        past = self.matched - self.nth
        if past < 0 or past % self.every:
            return False
        self.acted += 1
        return True


class RequestProxy:
    """One listening port per broker (``route``), each forwarding to the broker's own port."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="request-proxy")
        self._servers: dict[str, asyncio.AbstractServer] = {}
        self._connections: set[asyncio.StreamWriter] = set()
        self._faults: list[RequestFault] = []
        self._lock = threading.Lock()
        #: Every action taken: when, on which proxy, on which request.
        self.actions: list[dict[str, Any]] = []

    def start(self) -> RequestProxy:
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every listener and connection, then end the loop's thread."""
        if not self._thread.is_alive():
            return
        self._call(self._close_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)
        self._loop.close()

    def route(self, routes: Mapping[str, tuple[int, int]]) -> None:
        """Listen on each ``name -> (listen port, broker port)``, replacing earlier routes."""
        self._call(self._route(dict(routes)))

    def add_fault(self, fault: RequestFault) -> None:
        with self._lock:
            self._faults.append(fault)

    def remove_fault(self, fault: RequestFault) -> None:
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def faulty(self) -> bool:
        with self._lock:
            return bool(self._faults)

    def reset(self) -> None:
        """Remove every fault."""
        with self._lock:
            self._faults.clear()

    # --- the loop's side -------------------------------------------------------------------

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(START_TIMEOUT_S)

    async def _route(self, routes: dict[str, tuple[int, int]]) -> None:
        await self._close_servers()
        for name, (listen_port, broker_port) in routes.items():
            try:
                self._servers[name] = await asyncio.start_server(
                    lambda r, w, n=name, p=broker_port: self._serve(n, p, r, w),
                    "127.0.0.1",
                    listen_port,
                    reuse_address=True,
                )
            except OSError as exc:
                await self._close_servers()
                raise RequestProxyError(
                    f"{name}: cannot listen on 127.0.0.1:{listen_port}: {exc}"
                ) from exc

    async def _close_servers(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.close()
            await server.wait_closed()

    async def _close_all(self) -> None:
        await self._close_servers()
        for writer in list(self._connections):
            _reset(writer)

    def _choose(self, broker: str, header: RequestHeader) -> RequestFault | None:
        with self._lock:
            for fault in self._faults:
                if fault.chooses(broker, header):
                    return fault
        return None

    def _record(self, broker: str, header: RequestHeader, fault: RequestFault) -> None:
        self.actions.append(
            {
                "ts": time.time(),
                "proxy": broker,
                "action": fault.action,
                "api": header.api,
                "api_version": header.api_version,
                "correlation_id": header.correlation_id,
                "client_id": header.client_id,
            }
        )

    async def _serve(
        self,
        broker: str,
        broker_port: int,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
    ) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", broker_port)
        except OSError:
            _reset(client_writer)  # the broker is down: the client sees a refused broker
            return
        pair = (client_writer, broker_writer)
        self._connections.update(pair)
        lost: set[int] = set()
        requests = asyncio.ensure_future(self._requests(broker, client_reader, broker_writer, lost))
        answers = asyncio.ensure_future(self._answers(broker_reader, client_writer, lost))
        try:
            await asyncio.wait((requests, answers), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (requests, answers):
                task.cancel()
            for writer in pair:
                _reset(writer)
            self._connections.difference_update(pair)

    async def _requests(
        self,
        broker: str,
        reader: asyncio.StreamReader,
        to_broker: asyncio.StreamWriter,
        lost: set[int],
    ) -> None:
        while (request := await _read(reader)) is not None:
            try:
                header = parse_request_header(request)
            except FrameError as exc:
                log.warning("%s: %s; connection closed", broker, exc)
                return
            fault = self._choose(broker, header)
            if fault is not None:
                self._record(broker, header, fault)
                if fault.action == "cut":
                    return
                if fault.action == "delay":
                    await asyncio.sleep(fault.delay_ms / 1000)
                if fault.action == "lose_answer":
                    lost.add(header.correlation_id)
            to_broker.write(framed(request))
            await to_broker.drain()

    async def _answers(
        self, reader: asyncio.StreamReader, to_client: asyncio.StreamWriter, lost: set[int]
    ) -> None:
        while (answer := await _read(reader)) is not None:
            if response_correlation_id(answer) in lost:
                return  # the broker acted; its answer never reaches the client
            to_client.write(framed(answer))
            await to_client.drain()


async def _read(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame, or None when the peer is gone (closed, reset, or not Kafka)."""
    try:
        return await read_frame(reader)
    except (OSError, FrameError, asyncio.IncompleteReadError):
        return None


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset, as a broker that vanished does: the peer sees no orderly end."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
