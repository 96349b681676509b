"""A thin asyncio adapter: a ClientConnection over an asyncio Protocol or over streams.

    conn = await open_connection("127.0.0.1", 9092, client_id="me")   # a BufferedProtocol: no copy in
    await conn.negotiate()                                            # ApiVersions
    await conn.authenticate(Sasl("SCRAM-SHA-256", "alice", "secret"))  # if the listener wants SASL
    resp = await conn.request(MetadataRequest(topics=None))           # a Response event; .message
    await conn.close()

Any number of requests may be in flight (up to the connection's ``max_in_flight``): each waits for its own
answer, and whatever order the answers come in, each gets its own. ``from_streams(reader, writer)`` runs
the same over a StreamReader/StreamWriter pair. A request that times out is abandoned (its late answer is
dropped) and the connection stays up. When the stream breaks (the peer's bad frame, an answer to no
request, a hang-up), every waiting request fails with the cause, and so does every later one.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Callable, Optional, TypeVar

from .client import ClientConnection
from .events import ClientEvent, Outgoing, Request, Response, Token, TokenReceived, response_of
from .sasl import Authentication, Sasl
from .versions import Versions
from .writes import write_buffers, write_now

__all__ = ["AsyncConnection", "ClientProtocol", "ConnectionClosed", "from_streams", "open_connection", "write_buffers"]

X = TypeVar("X")
READ_CHUNK = 65536


class ConnectionClosed(ConnectionError):
    """The peer closed the connection (or it was closed here)."""


class AsyncConnection:
    """Requests and exchanges over asyncio on one ClientConnection (``conn``: its protocol state)."""

    def __init__(self, conn: ClientConnection) -> None:
        self.conn = conn
        self.error: Optional[BaseException] = None  # why the connection ended (None while it is up)
        self._answers: dict[int, asyncio.Future[ClientEvent]] = {}  # correlation id -> its answer
        self._tokens: deque[asyncio.Future[ClientEvent]] = deque()  # bare SASL answers awaited, in order
        self._transport: Optional[asyncio.BaseTransport] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._reading: Optional[asyncio.Task[None]] = None
        self._can_write: Optional[asyncio.Event] = None

    @property
    def closed(self) -> bool:
        return self.error is not None

    # -- what comes in ------------------------------------------------------------------------------------

    def deliver(self, events: list[ClientEvent]) -> None:
        """Hand each event to the request waiting for it (events nobody waits for any more are dropped)."""
        for event in events:
            if isinstance(event, TokenReceived):
                fut = self._tokens.popleft() if self._tokens else None
            else:
                fut = self._answers.pop(event.request.correlation_id, None)
            if fut is not None and not fut.done():
                fut.set_result(event)

    def fail(self, error: BaseException) -> None:
        """The connection is over: every waiting request fails with ``error``, and so will later ones."""
        if self.error is None:
            self.error = error
        waiting = [*self._answers.values(), *self._tokens]
        self._answers.clear()
        self._tokens.clear()
        self.conn.close()
        for fut in waiting:
            if not fut.done():
                fut.set_exception(self.error)
        if self._writer is not None:
            self._writer.close()
        elif self._transport is not None:
            self._transport.close()

    # -- what goes out ------------------------------------------------------------------------------------

    async def send(self, outgoing: Outgoing) -> Optional[asyncio.Future[ClientEvent]]:
        """Write a request or token built on ``conn``; the future of its answer (None: none comes)."""
        if self.error is not None:
            raise self.error
        fut: Optional[asyncio.Future[ClientEvent]] = None
        if isinstance(outgoing, Token) or outgoing.expects_response:
            fut = asyncio.get_running_loop().create_future()
            if isinstance(outgoing, Token):
                self._tokens.append(fut)
            else:
                self._answers[outgoing.correlation_id] = fut
        # A request's buffers go into the transport at once (before 3.12 without writelines' join of the
        # whole request): nothing can come between them and a cancelled caller cannot cut them
        transport = self._writer.transport if self._writer is not None else self._transport
        assert transport is not None
        write_now(transport, outgoing.buffers, tls=transport.get_extra_info("ssl_object") is not None)
        if self._writer is not None:
            try:
                await self._writer.drain()
            except ConnectionError as e:
                # The stream broke under the write (a TLS alert, the peer's close): the reading side learns
                # why and fails the answer's future with that cause, which says more than "Connection lost".
                if fut is None:
                    self.fail(e)  # (keeps the reader's cause when it came first)
                    raise (self.error or e) from None
        else:
            assert self._can_write is not None
            await self._can_write.wait()
        return fut

    async def roundtrip(self, outgoing: Outgoing, timeout: Optional[float] = None) -> Optional[ClientEvent]:
        """Send and wait for the answer (None for a Produce with acks=0). A timeout abandons the request
        (its late answer is dropped) and raises asyncio.TimeoutError; the connection stays up."""
        fut = await self.send(outgoing)
        if fut is None:
            return None
        try:
            if timeout is None:
                return await fut
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            if isinstance(outgoing, Request):
                self._answers.pop(outgoing.correlation_id, None)
                self.conn.abandon(outgoing.correlation_id)
            raise
        except asyncio.CancelledError:
            if isinstance(outgoing, Request) and self._answers.pop(outgoing.correlation_id, None) is not None:
                self.conn.abandon(outgoing.correlation_id)
            raise

    async def request(self, message: Any, version: Optional[int] = None, *, api_key: Optional[int] = None,
                      timeout: Optional[float] = None) -> Response:
        """Send a request (the negotiated version when none is given) and return its Response; a body that
        does not decode raises its KcodecError. A Produce with acks=0 returns a Response with message None."""
        if self.error is not None:
            raise self.error
        outgoing = self.conn.send(message, version, api_key=api_key)
        return response_of(outgoing, await self.roundtrip(outgoing, timeout))

    async def run(self, exchange: X, timeout: Optional[float] = None) -> X:
        """Drive an exchange (``start()``, ``receive(event)``: a Negotiation, an Authentication) to its end."""
        outgoing = exchange.start()  # type: ignore[attr-defined]
        while outgoing is not None:
            outgoing = exchange.receive(await self.roundtrip(outgoing, timeout))  # type: ignore[attr-defined]
        return exchange

    async def negotiate(self, timeout: Optional[float] = None, **kwargs: Any) -> Versions:
        """ApiVersions: what the broker speaks; afterwards requests default to the best common version."""
        await self.run(self.conn.negotiation(**kwargs), timeout)
        return self.conn.versions

    async def authenticate(self, sasl: Sasl, timeout: Optional[float] = None) -> Authentication:
        """SASL (after negotiate); ``lifetime_ms`` of the result: when to re-authenticate (KIP-368)."""
        return await self.run(Authentication(self.conn, sasl), timeout)

    async def close(self) -> None:
        self.fail(ConnectionClosed("the connection was closed"))
        if self._reading is not None and self._reading is not asyncio.current_task():
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)
        if self._writer is not None:
            try:
                await self._writer.wait_closed()
            except OSError:
                pass


class ClientProtocol(asyncio.BufferedProtocol):
    """The asyncio Protocol under an AsyncConnection: the transport reads straight into the connection's
    buffer (``get_buffer``), so received bytes are never copied."""

    def __init__(self, target: AsyncConnection) -> None:
        self.target = target
        target._can_write = asyncio.Event()
        target._can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.target._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.target.conn.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        try:
            self.target.deliver(self.target.conn.buffer_updated(nbytes))
        except Exception as e:  # a bad frame, an answer to no request: the stream is over
            self.target.fail(e)

    def eof_received(self) -> Optional[bool]:
        self.target.fail(ConnectionClosed("the peer closed the connection"))
        return None

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.target.fail(exc if exc is not None else ConnectionClosed("the peer closed the connection"))
        assert self.target._can_write is not None
        self.target._can_write.set()

    def pause_writing(self) -> None:
        assert self.target._can_write is not None
        self.target._can_write.clear()

    def resume_writing(self) -> None:
        assert self.target._can_write is not None
        self.target._can_write.set()


async def open_connection(host: str, port: int, *, ssl: Any = None, server_hostname: Optional[str] = None,
                          conn: Optional[ClientConnection] = None, **conn_kwargs: Any) -> AsyncConnection:
    """Connect (TLS when ``ssl`` is an SSLContext) and return the AsyncConnection over a ClientProtocol;
    ``conn`` or ``conn_kwargs`` (ClientConnection's) make its protocol state."""
    target = AsyncConnection(conn or ClientConnection(**conn_kwargs))
    loop = asyncio.get_running_loop()
    await loop.create_connection(lambda: ClientProtocol(target), host, port, ssl=ssl,
                                 server_hostname=server_hostname if ssl else None)
    return target


def from_streams(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 conn: Optional[ClientConnection] = None, *,
                 on_error: Callable[[BaseException], BaseException] = lambda e: e,
                 **conn_kwargs: Any) -> AsyncConnection:
    """An AsyncConnection over a stream pair (a reading task feeds the connection). ``on_error`` turns the
    cause of a broken stream (an OSError, a DecodeError, ConnectionClosed at the end) into what waiting
    requests fail with."""
    target = AsyncConnection(conn or ClientConnection(**conn_kwargs))
    target._writer = writer

    async def read() -> None:
        try:
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    raise ConnectionClosed("the peer closed the connection")
                target.deliver(target.conn.receive_data(data))
        except asyncio.CancelledError:
            pass
        except Exception as e:  # OSError (ssl.SSLError among them), DecodeError, RemoteProtocolError
            target.fail(on_error(e))

    target._reading = asyncio.get_running_loop().create_task(read())
    return target
