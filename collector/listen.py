"""Listening sockets that refuse to share: a port another process holds is an error at start.

A second `tooltrail serve` on the same ports must not start: with a shared port (gRPC turns
SO_REUSEPORT on by default) the kernel splits connections between the two processes, and so
their spans between two databases.
"""

from __future__ import annotations

import errno
import socket


class PortInUse(Exception):
    """A receiver could not bind its address; `serve` exits 2 with this message."""

    def __init__(self, what: str, flag: str, host: str, port: int, reason: str) -> None:
        shown = f"[{host}]" if ":" in host else host
        super().__init__(
            f"cannot listen for {what} on {shown}:{port}: {reason} (is another tooltrail "
            f"serve running? choose another port with {flag})"
        )


def tcp_listener(what: str, flag: str, host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port) — port 0 picks a free one — never shared with
    another process (no SO_REUSEPORT); raises PortInUse when the address is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        # SO_REUSEADDR (set by create_server) only allows rebinding past TIME_WAIT
        listener = socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        reason = "the address is in use" if exc.errno == errno.EADDRINUSE else str(exc)
        raise PortInUse(what, flag, host, port, reason) from exc
    # Accepted connections inherit TCP_NODELAY. asyncio sets it only on sockets whose protocol
    # number is IPPROTO_TCP, which create_server's (protocol 0) are not: without it, an answer
    # written in two segments (headers, then body) waits for the client's delayed ACK of the
    # first, on every request (README, "Measured").
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listener
