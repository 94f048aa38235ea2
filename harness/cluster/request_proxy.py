"""The proxy in front of each broker: network faults, and faults aimed at one Kafka request.

Each broker gets a client listener that it advertises at its proxy's address, so every
connection a client opens, including those metadata sends it to, passes through that broker's
proxy; the brokers' own traffic (replication, the KRaft quorum) and the harness's observers use
the direct listener and are untouched.

The proxy reads Kafka's framing (:mod:`.kafka_wire`), so a fault acts on whole requests and
answers. Network faults ("toxics", per direction) delay each frame (``latency``), hold a
direction to a rate (``bandwidth``), swallow every frame while keeping the connection open
(``timeout`` 0: a blackhole) or reset a connection that carries a frame (``reset_peer``); a
disabled proxy closes its connections and refuses new ones. A :class:`RequestFault` chooses
requests by API and client and loses a request's answer after the broker acted on it (the
connection is reset when the answer arrives), answers it with an error the broker never sent
(the broker is asked something harmless in its place, so the answer comes in its turn),
delays it, cuts the connection before it is forwarded, or holds the answer back for good and
tells whoever asked which client port sent it, so its process can be killed before it learns
what the broker did: what a TCP-level fault only does when it happens to catch a request in
flight.
Every request fault's action is recorded (:attr:`RequestProxy.actions`).

It runs on its own event loop in a daemon thread of the process that started it, so nothing
outlives that process and nothing is built or downloaded for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ClusterError
from .kafka_answers import ERROR_APIS, AnswerError, error_answer
from .kafka_wire import (
    FrameError,
    RequestHeader,
    api_keys,
    parse_request_header,
    read_frame,
    request_header,
    response_correlation_id,
)
from .kafka_wire import frame as framed

log = logging.getLogger(__name__)

#: What a pump does with each frame: what to send on and after what delay (empty bytes: nothing,
#: the connection kept open), or None to end the connection.
Decide = Callable[[bytes], "tuple[bytes, float] | None"]

#: What a request fault does to a request it chose.
ACTIONS = ("lose_answer", "error", "delay", "cut", "kill_sender")
#: The network faults a proxy takes, per direction (see the module's docstring).
TOXICS = ("latency", "bandwidth", "timeout", "reset_peer")
DIRECTIONS = ("to_broker", "from_broker")
CALL_TIMEOUT_S = 10.0


class RequestProxyError(ClusterError):
    """The proxy could not listen, or was asked for a fault it cannot do."""


@dataclass
class RequestFault:
    """Which requests to act on, and what to do to them.

    ``api``: the API's name as Kafka's docs write it (``Produce``); ``clients``: client-id
    prefixes it takes (empty: every client); ``skip_clients``: client-id prefixes it passes
    by; ``brokers``: the proxies (``broker-N``) it acts on (None: all). Of the matching
    requests, it acts on those from the ``nth`` (1-based) on, every ``every``-th, at most
    ``count`` of them (None: no limit). ``error`` (action ``error``): the error code the
    request is answered with, the broker never seeing it (:mod:`.kafka_answers`).
    ``kill_sender``: the answer is held back, the connection kept open, and the client port
    that sent the request is put on :attr:`answered` once the broker has answered it (acted on
    it), for the caller to kill that client's process.
    """

    api: str
    action: str
    clients: tuple[str, ...] = ()
    skip_clients: tuple[str, ...] = ()
    nth: int = 1
    every: int = 1
    count: int | None = 1
    delay_ms: int = 0
    error: int = 0
    brokers: frozenset[str] | None = None
    matched: int = field(default=0, init=False)
    acted: int = field(default=0, init=False)
    answered: list[int] = field(default_factory=list, init=False)
    #: The client ports of chosen requests whose connection ended before their answer came.
    unanswered: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.api not in api_keys():
            raise RequestProxyError(f"api {self.api!r} is not an API of the Kafka protocol")
        if self.action not in ACTIONS:
            raise RequestProxyError(f"action {self.action!r} is not one of {', '.join(ACTIONS)}")
        if self.nth < 1 or self.every < 1 or (self.count is not None and self.count < 1):
            raise RequestProxyError("nth, every and count must be at least 1")
        if self.action == "error" and (self.api not in ERROR_APIS or not self.error):
            raise RequestProxyError(
                f"an error answer needs an error code and one of {', '.join(ERROR_APIS)}"
            )
        self.api_key = api_keys()[self.api]

    def chooses(self, broker: str, header: RequestHeader) -> bool:
        """Whether this request is one to act on (counting it when it matches)."""
        if header.api_key != self.api_key:
            return False
        if self.brokers is not None and broker not in self.brokers:
            return False
        client = header.client_id or ""
        if self.clients and not client.startswith(self.clients):
            return False
        if self.skip_clients and client.startswith(self.skip_clients):
            return False
        self.matched += 1
        if self.count is not None and self.acted >= self.count:
            return False
        past = self.matched - self.nth
        if past < 0 or past % self.every:
            return False
        self.acted += 1
        return True


@dataclass(frozen=True)
class Toxic:
    kind: str
    direction: str
    attributes: Mapping[str, Any]


@dataclass
class Route:
    """One broker's proxy: where it listens, where it forwards, and what it does now."""

    listen: int
    upstream: int
    enabled: bool = True
    toxics: dict[str, Toxic] = field(default_factory=dict)
    server: asyncio.AbstractServer | None = None
    connections: set[asyncio.Task[None]] = field(default_factory=set)


class RequestProxy:
    """One listening port per broker (:meth:`route`), each forwarding to the broker's own."""

    def __init__(self, seed: int = 0) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="request-proxy", daemon=True
        )
        self._routes: dict[str, Route] = {}
        self._faults: list[RequestFault] = []
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        #: Every request fault's action: when, which fault (its ``id``), on which proxy, on
        #: which request.
        self.actions: list[dict[str, Any]] = []

    # --- what the harness calls, from any thread -------------------------------------------

    def start(self) -> RequestProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every listener and connection, then end the loop's thread."""
        if not self._thread.is_alive():
            return
        self._call(self._close_routes(list(self._routes)))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CALL_TIMEOUT_S)
        self._loop.close()

    def route(self, routes: Mapping[str, tuple[int, int]]) -> None:
        """Proxies ``name -> (listen port, broker port)`` on 127.0.0.1, replacing any others."""
        self._call(self._route(dict(routes)))

    def proxies(self) -> dict[str, dict[str, Any]]:
        """Every proxy with its state (``upstream``, ``enabled``, ``toxics``), by name."""
        with self._lock:
            return {
                name: {
                    "listen": f"127.0.0.1:{route.listen}",
                    "upstream": f"127.0.0.1:{route.upstream}",
                    "enabled": route.enabled,
                    "toxics": sorted(route.toxics),
                }
                for name, route in self._routes.items()
            }

    def add_toxic(
        self, proxy: str, name: str, kind: str, direction: str, attributes: dict[str, Any]
    ) -> None:
        """Put a network fault on one proxy's direction until it is removed."""
        if kind not in TOXICS:
            raise RequestProxyError(f"{kind!r} is not one of {', '.join(TOXICS)}")
        if direction not in DIRECTIONS:
            raise RequestProxyError(f"{direction!r} is not one of {', '.join(DIRECTIONS)}")
        if kind == "timeout" and attributes.get("timeout", 0):
            raise RequestProxyError("a timeout fault swallows frames: its timeout must be 0")
        with self._lock:
            self._route_named(proxy).toxics[name] = Toxic(kind, direction, dict(attributes))

    def remove_toxic(self, proxy: str, name: str) -> None:
        with self._lock:
            self._route_named(proxy).toxics.pop(name, None)

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """A disabled proxy closes its connections and refuses new ones: a cut-off broker."""
        self._route_named(proxy)
        self._call(self._listen(proxy) if enabled else self._close_routes([proxy], keep=True))

    def add_fault(self, fault: RequestFault) -> None:
        with self._lock:
            self._faults.append(fault)

    def remove_fault(self, fault: RequestFault) -> None:
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def faulty(self) -> bool:
        """Whether any proxy has a fault on it or is disabled."""
        with self._lock:
            routes = self._routes.values()
            return bool(self._faults) or any(not r.enabled or r.toxics for r in routes)

    def reset(self) -> None:
        """Every proxy enabled again, every fault removed."""
        with self._lock:
            self._faults.clear()
            for route in self._routes.values():
                route.toxics.clear()
            disabled = [name for name, route in self._routes.items() if not route.enabled]
        for name in disabled:
            self.set_enabled(name, True)

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(CALL_TIMEOUT_S)

    def _route_named(self, name: str) -> Route:
        try:
            return self._routes[name]
        except KeyError:
            raise RequestProxyError(f"no proxy named {name!r}") from None

    # --- the loop's side --------------------------------------------------------------------

    async def _route(self, routes: dict[str, tuple[int, int]]) -> None:
        await self._close_routes(list(self._routes))
        with self._lock:
            self._routes = {name: Route(*ports) for name, ports in routes.items()}
        for name in routes:
            await self._listen(name)

    async def _listen(self, name: str) -> None:
        route = self._routes[name]
        if route.server is not None:
            return
        try:
            route.server = await asyncio.start_server(
                lambda r, w: self._accept(name, r, w), "127.0.0.1", route.listen, reuse_address=True
            )
        except OSError as exc:
            raise RequestProxyError(
                f"{name}: cannot listen on 127.0.0.1:{route.listen}: {exc}"
            ) from exc
        route.enabled = True

    async def _close_routes(self, names: list[str], keep: bool = False) -> None:
        """Stop listening and reset every connection; ``keep``: the route stays, disabled."""
        for name in names:
            route = self._routes[name]
            route.enabled = False
            if route.server is not None:
                route.server.close()
                await route.server.wait_closed()
                route.server = None
            for task in list(route.connections):
                task.cancel()
            await asyncio.gather(*route.connections, return_exceptions=True)
            if not keep:
                with self._lock:
                    self._routes.pop(name, None)

    def _accept(
        self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        route = self._routes[name]
        task = asyncio.ensure_future(self._serve(name, route, reader, writer))
        route.connections.add(task)
        task.add_done_callback(route.connections.discard)

    async def _serve(
        self,
        name: str,
        route: Route,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
    ) -> None:
        broker_writer = None
        # by correlation id: None to lose it, a fault to hold it for (kill_sender)
        answers: dict[int, bytes | RequestFault | None] = {}
        port = int(client_writer.get_extra_info("peername")[1])
        try:
            broker_reader, broker_writer = await asyncio.open_connection(
                "127.0.0.1", route.upstream
            )
            pumps = [
                asyncio.ensure_future(
                    self._pump(
                        route,
                        "to_broker",
                        client_reader,
                        broker_writer,
                        self._request(name, answers, port),
                    )
                ),
                asyncio.ensure_future(
                    self._pump(
                        route, "from_broker", broker_reader, client_writer, _answer(answers, port)
                    )
                ),
            ]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                ended = await asyncio.gather(*pumps, return_exceptions=True)
            for failure in ended:
                if isinstance(failure, Exception):  # the proxy's own fault: say so
                    log.error("%s: a connection ended by %r", name, failure, exc_info=failure)
        except OSError:
            pass  # the broker is down: the client sees its connection reset
        finally:
            for writer in (client_writer, broker_writer):
                if writer is not None:
                    _reset(writer)
            for held in answers.values():  # the connection ended before their answer came
                if isinstance(held, RequestFault):
                    held.unanswered.append(port)

    def _request(
        self, name: str, answers: dict[int, bytes | RequestFault | None], port: int
    ) -> Decide:
        """What to do with each request: what to forward and after what delay, or None to end
        the connection. ``answers`` gets what replaces the answer to a request (None: lose it; a
        fault: hold it for that fault). ``port``: the client's end of the connection.
        """

        def decide(request: bytes) -> tuple[bytes, float] | None:
            try:
                header = parse_request_header(request)
            except FrameError as exc:
                log.warning("%s: %s; connection closed", name, exc)
                return None
            fault = self._choose(name, header)
            if fault is None:
                return request, 0.0
            if fault.action == "error":
                try:
                    answers[header.correlation_id] = error_answer(request, fault.error)
                except AnswerError as exc:
                    log.warning("%s: %s; forwarded as it was", name, exc)
                    return request, 0.0
                self._record(name, header, fault, port)
                return _harmless(header), 0.0
            self._record(name, header, fault, port)
            if fault.action == "cut":
                return None
            if fault.action == "lose_answer":
                answers[header.correlation_id] = None
            if fault.action == "kill_sender":
                answers[header.correlation_id] = fault
            return request, fault.delay_ms / 1000 if fault.action == "delay" else 0.0

        return decide

    def _choose(self, name: str, header: RequestHeader) -> RequestFault | None:
        with self._lock:
            return next((f for f in self._faults if f.chooses(name, header)), None)

    def _record(self, name: str, header: RequestHeader, fault: RequestFault, port: int) -> None:
        self.actions.append(
            {
                "ts": time.time(),
                "fault": id(fault),
                "proxy": name,
                "action": fault.action,
                "api": header.api,
                "api_version": header.api_version,
                "correlation_id": header.correlation_id,
                "client_id": header.client_id,
                "client_port": port,
                **({"error": fault.error} if fault.action == "error" else {}),
            }
        )

    def _toxics(self, route: Route, direction: str) -> dict[str, Mapping[str, Any]]:
        with self._lock:
            return {t.kind: t.attributes for t in route.toxics.values() if t.direction == direction}

    async def _pump(
        self,
        route: Route,
        direction: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        decide: Decide,
    ) -> None:
        """Frames from ``reader`` to ``writer``, each after its faults; returns to end both."""
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
        sender = asyncio.ensure_future(self._send(route, direction, queue, writer))
        try:
            while (frame := await _read(reader)) is not None:
                decided = decide(frame)
                if decided is None:
                    return
                frame, extra = decided
                if not frame:
                    continue  # held back, the connection kept open
                toxics = self._toxics(route, direction)
                if "reset_peer" in toxics:
                    await asyncio.sleep(float(toxics["reset_peer"].get("timeout", 0)) / 1000)
                    return
                if "timeout" in toxics:
                    continue  # swallowed, the connection kept open
                latency = toxics.get("latency", {})
                jitter = float(latency.get("jitter", 0))
                delay = float(latency.get("latency", 0)) + self._rng.uniform(-jitter, jitter)
                queue.put_nowait((self._loop.time() + max(delay, 0.0) / 1000 + extra, frame))
            queue.put_nowait(None)
            await sender  # what was read goes out before the connection ends
        finally:
            sender.cancel()

    async def _send(
        self,
        route: Route,
        direction: str,
        queue: asyncio.Queue[tuple[float, bytes] | None],
        writer: asyncio.StreamWriter,
    ) -> None:
        while (item := await queue.get()) is not None:
            due, frame = item
            rate = self._toxics(route, direction).get("bandwidth", {}).get("rate")
            if rate:
                due = max(due, self._loop.time() + (len(frame) + 4) / (float(rate) * 1000))
            await asyncio.sleep(max(due - self._loop.time(), 0.0))
            writer.write(framed(frame))
            await writer.drain()


def _answer(answers: dict[int, bytes | RequestFault | None], port: int) -> Decide:
    """Each answer as it came, or what replaces it: an error answer, None (the answer is
    lost: the connection ends), or nothing (held for a ``kill_sender`` fault, which is told the
    client's ``port``)."""

    def decide(answer: bytes) -> tuple[bytes, float] | None:
        try:
            correlation_id = response_correlation_id(answer)
        except FrameError:
            return None
        if correlation_id not in answers:
            return answer, 0.0
        replaced = answers.pop(correlation_id)
        if isinstance(replaced, RequestFault):
            replaced.answered.append(port)
            return b"", 0.0
        return None if replaced is None else (replaced, 0.0)

    return decide


def _harmless(header: RequestHeader) -> bytes:
    """What the broker is sent in place of a request answered with an error: ApiVersions v0
    (every broker answers it and acts on it in no way) under the same correlation id and client
    id, so its answer comes back in the request's turn."""
    return request_header(api_keys()["ApiVersions"], 0, header.correlation_id, header.client_id)


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
