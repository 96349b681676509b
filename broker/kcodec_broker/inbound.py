"""A connection's reading side: the socket's bytes go straight into its ServerConnection's frame buffer.

With asyncio's streams each byte of a request was copied three times before the handler saw it (the
transport's chunk, the StreamReader's buffer, the chunk ``read()`` returns, then the frame reader's
buffer): a 1 MB Produce, four copies of it counting the log's own. Here the transport receives into the
frame reader's buffer (``asyncio.BufferedProtocol``; asyncio's TLS layer decrypts into it as well), so a
request is the socket's bytes in place. The protocol stays a StreamReaderProtocol, so that the connection's
StreamWriter (``drain``, ``start_tls``) works as before; its StreamReader only ever sees the end of the stream.

As Kafka mutes a connection while its request is served, reading pauses once a whole request waits and
resumes when every waiting one was answered (``served``): a client that pipelines requests makes the broker
hold one unfinished frame beyond them, never more.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Callable, Optional

import kcodec
from kcodec.protocol import ServerConnection


class Inbound(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """One connection's protocol: ``conn`` gets the bytes, ``wait`` says when it has a request (or the end)."""

    def __init__(self, conn: ServerConnection, connected: Callable[..., Any]) -> None:
        super().__init__(asyncio.StreamReader(), connected)
        self.conn = conn
        self.head = b""  # the stream's first bytes (a TLS handshake on a plaintext listener shows there)
        self.eof = False
        self.received = 0  # bytes so far (a request still coming in keeps the connection from being idle)
        self.error: Optional[BaseException] = None  # a bad frame, or why the connection was lost
        self.writer: Optional[asyncio.StreamWriter] = None  # set by the connection's task, after any TLS handshake
        self._room: Optional[memoryview] = None
        self._waiter: Optional[asyncio.Future[None]] = None
        self._muted: Optional[Any] = None  # the transport paused while requests wait

    # -- the transport's side ----------------------------------------------------------------------------
    def get_buffer(self, sizehint: int) -> memoryview:
        self._room = self.conn.get_buffer(-1)  # the rest of the request being received, else a chunk
        return self._room

    def buffer_updated(self, nbytes: int) -> None:
        if not self.head and self._room is not None:
            self.head = bytes(self._room[:min(nbytes, 8)])
        self._room = None
        self.received += nbytes
        try:
            self.conn.buffer_updated(nbytes)
        except kcodec.DecodeError as e:  # a bad size prefix: the stream cannot go on
            self.error = e
        if self.conn.frames_waiting or self.error is not None:
            self._pause()
            self._wake()

    def eof_received(self) -> Optional[bool]:
        self.eof = True
        self._wake()
        return super().eof_received()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.eof = True
        if exc is not None and self.error is None:
            self.error = exc
        self._wake()
        super().connection_lost(exc)

    # -- the connection's task -----------------------------------------------------------------------------
    async def wait(self, timeout: float) -> None:
        """Until a whole request waits, the stream ended or failed (``eof``, ``error``); TimeoutError after
        ``timeout`` seconds of nothing."""
        if not self.conn.frames_waiting and self.error is None and self.conn.reader.pending >= 4:
            try:  # a bad size prefix the frames before it were handed out ahead of: it fails now, not at more bytes
                self.conn.buffer_updated(0)
            except kcodec.DecodeError as e:
                self.error = e
        if self.conn.frames_waiting or self.eof or self.error is not None:
            return
        self._resume()
        while True:
            received = self.received
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if sys.version_info >= (3, 11):  # a cancel scope, cheaper than wait_for's task
                    async with asyncio.timeout(timeout):
                        await self._waiter
                else:
                    await asyncio.wait_for(self._waiter, timeout)
                return
            except asyncio.TimeoutError:
                if self.received == received:  # idle: nothing came, not even part of a request
                    raise
            finally:
                self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _pause(self) -> None:
        # the writer's transport, once the connection's task has it (after its TLS handshake, the TLS one:
        # never the socket's own, which the TLS layer paces)
        transport: Any = self.writer.transport if self.writer is not None else None
        if self._muted is None and transport is not None and not transport.is_closing():
            transport.pause_reading()
            self._muted = transport

    def _resume(self) -> None:
        muted, self._muted = self._muted, None
        if muted is not None and not muted.is_closing():
            muted.resume_reading()
