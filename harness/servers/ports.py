"""Free TCP ports on 127.0.0.1, and the addresses a server listens on."""

from __future__ import annotations

import socket
from contextlib import ExitStack

import psutil


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free a moment ago.

    Another process can still take one before the server binds it; a server's start
    retries with fresh ports when that happens.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def accepts_connections(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """The ``(address, port)`` pairs process ``pid`` listens on (TCP); a JVM's IPv6 socket
    names an IPv4 address as IPv4-mapped, given here as the IPv4 address."""
    return {
        (connection.laddr.ip.removeprefix("::ffff:"), connection.laddr.port)
        for connection in psutil.Process(pid).net_connections("inet")
        if connection.status == psutil.CONN_LISTEN
    }
