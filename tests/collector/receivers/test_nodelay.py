"""The HTTP listener's connections have TCP_NODELAY, as asyncio serves them (uvicorn is handed
the bound socket): asyncio sets it only on sockets of protocol IPPROTO_TCP, which
`socket.create_server`'s are not, and without it every answer written in two segments waited
for the client's delayed ACK (README, "Measured")."""

from __future__ import annotations

import asyncio
import socket

from tooltrail.collector.listen import tcp_listener


def test_served_connections_do_not_wait_for_delayed_acks() -> None:
    async def accept_one() -> tuple[int, int]:
        listener = tcp_listener("the test", "--port", "127.0.0.1", 0)
        seen: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result((sock.proto, sock.getsockopt(socket.IPPROTO_TCP,
                                                             socket.TCP_NODELAY)))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            found = await asyncio.wait_for(seen, 10)
            writer.close()
            return found
        finally:
            server.close()
            await server.wait_closed()

    proto, nodelay = asyncio.run(accept_one())
    assert proto != socket.IPPROTO_TCP  # so asyncio did not set it: the listener's is inherited
    assert nodelay != 0
