"""A connection's reading side: the socket's bytes go straight into its ServerConnection's frame buffer.

With asyncio's streams each byte of a request was copied three times before the handler saw it (the
transport's chunk, the StreamReader's buffer, the chunk ``read()`` returns, then the frame reader's
buffer): a 1 MB Produce, four copies of it counting the log's own. Here the transport receives into the
frame reader's buffer (``asyncio.BufferedProtocol``; asyncio's TLS layer decrypts into it as well), so a
request is the socket's bytes in place. The protocol stays a StreamReaderProtocol, so that the connection's
StreamWriter (``drain``, ``start_tls``) works as before; its StreamReader only ever sees the end of the stream.

As Kafka mutes a connection while its request is served, reading pauses once a whole request waits while
the connection's task is busy, and resumes when the task waits again: a client that pipelines requests makes
the broker hold one whole frame beyond the one served (and at most a chunk of the next), never more. A
request the waiting task takes at once pauses nothing: a client with one request in flight (librdkafka's
Produce) costs no pause and resume, two system calls and asyncio's reader handle a request.
"""

from __future__ import annotations

import asyncio
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
        self._timer: Optional[asyncio.TimerHandle] = None  # the idle timer (_idle)
        self._mark: tuple[int, float, float] = (0, 0.0, 0.0)  # (received, since, timeout) of the idle span

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
        waiting = self.conn.frames_waiting
        if waiting > (self._waiter is not None) or self.error is not None:
            self._pause()
        if waiting or self.error is not None:
            self._wake()

    def eof_received(self) -> Optional[bool]:
        self.eof = True
        self._wake()
        return super().eof_received()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.eof = True
        if self._timer is not None:  # the loop's timer would keep this connection's buffers alive
            self._timer.cancel()
            self._timer = None
        if exc is not None and self.error is None:
            self.error = exc
        self._wake()
        super().connection_lost(exc)

    # -- the connection's task -----------------------------------------------------------------------------
    async def wait(self, timeout: float) -> bool:
        """Until a whole request waits, the stream ended or failed (``eof``, ``error``); TimeoutError after
        ``timeout`` seconds of nothing. Whether it waited on the event loop (the connection's task then
        took a turn behind every other ready one)."""
        if not self.conn.frames_waiting and self.error is None and self.conn.reader.pending >= 4:
            try:  # a bad size prefix the frames before it were handed out ahead of: it fails now, not at more bytes
                self.conn.buffer_updated(0)
            except kcodec.DecodeError as e:
                self.error = e
        if self.conn.frames_waiting or self.eof or self.error is not None:
            return False
        self._resume()
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        # one idle timer a connection, moved on only when it fires (_idle): not a timer made and cancelled
        # at every request
        self._mark = (self.received, loop.time(), timeout)
        if self._timer is None or self._timer.when() > self._mark[1] + timeout:
            self._arm(loop, self._mark[1] + timeout)
        try:
            await self._waiter
            return True
        finally:
            self._waiter = None

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._idle)

    def _idle(self) -> None:
        """The idle timer: TimeoutError for the waiting task after ``timeout`` seconds in which nothing came,
        not even part of a request; else the timer moves to the end of the present such span."""
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # not waiting: the next wait arms it again
        received, since, timeout = self._mark
        loop = waiter.get_loop()
        now = loop.time()
        if self.received != received:  # something came: a new span from now
            self._mark = (self.received, now, timeout)
            self._arm(loop, now + timeout)
        elif now - since >= timeout:
            waiter.set_exception(asyncio.TimeoutError())
        else:
            self._arm(loop, since + timeout)

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
