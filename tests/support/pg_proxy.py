"""A TCP proxy on 127.0.0.1 in front of the real PostgreSQL that can lose one commit's reply.

It forwards both ways unchanged and reads the server's messages (type byte, length,
body). Armed with a needle (bytes a statement's parameters hold), it lets the statement
that carries it, and its transaction's COMMIT, reach the server, holds back what the
server answers, and once the server says the transaction is over (ReadyForQuery, idle:
an explicit COMMIT or the implicit commit of an autocommit statement is done) closes both
sides instead of forwarding it: the batch is committed and the client never hears so, as
when a backend dies or the network breaks between the commit and its reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from typing import Final

_IDLE: Final = b"I"  # ReadyForQuery's status outside a transaction


class PgProxy:
    """One listening socket; every accepted client gets its own server connection."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.needle: bytes | None = None
        self.dropped = 0  # replies lost so far
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def arm(self, needle: bytes) -> None:
        """Lose the commit reply of the next statement whose message holds `needle`."""
        self.needle = needle

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        targeted = asyncio.Event()
        up = asyncio.create_task(self._requests(reader, upstream_writer, targeted))
        try:
            await self._replies(upstream_reader, writer, targeted)
        finally:
            up.cancel()
            for side in (writer, upstream_writer):
                side.transport.abort()

    async def _requests(
        self, client: asyncio.StreamReader, server: asyncio.StreamWriter, targeted: asyncio.Event
    ) -> None:
        """Client to server unchanged; the connection is targeted once the needle passes."""
        tail = b""
        with contextlib.suppress(ConnectionError):
            while data := await client.read(65536):
                needle = self.needle
                if needle is not None and needle in tail + data:
                    self.needle = None
                    targeted.set()
                tail = data[-len(needle) :] if needle else b""
                server.write(data)
                await server.drain()

    async def _replies(
        self, server: asyncio.StreamReader, client: asyncio.StreamWriter, targeted: asyncio.Event
    ) -> None:
        """Server to client, message by message (a lone 'N' answers an SSL request)."""
        first = True
        held: list[bytes] = []
        while True:
            kind = await server.read(1)
            if not kind:
                return
            if first and kind == b"N":
                first = False
                client.write(kind)
                continue
            first = False
            header = await server.readexactly(4)
            body = await server.readexactly(struct.unpack("!I", header)[0] - 4)
            message = kind + header + body
            if not targeted.is_set():
                client.write(message)
                await client.drain()
                continue
            held.append(message)
            if kind == b"Z":
                if body == _IDLE:
                    self.dropped += 1
                    return  # committed; its reply is lost with the connection
                client.write(b"".join(held))  # still inside the transaction: go on
                held.clear()
                await client.drain()


@contextlib.asynccontextmanager
async def pg_proxy(host: str, port: int) -> AsyncIterator[PgProxy]:
    """A running proxy in front of `host:port`."""
    proxy = PgProxy(host, port)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
