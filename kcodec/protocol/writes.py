"""Writing a frame given as buffers (a ServerConnection's ``data_to_send``: a Fetch response's codec bytes with
the log's stored batches between them; a ClientConnection's request with its record batches) to an asyncio
transport without asyncio copying the batches (public as ``kcodec.protocol.aio.write_buffers``)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, Sequence

# Python 3.12+: the socket transport keeps the buffers it is given (a deque, no copy) and sends them with
# sendmsg; before, it sends a buffer straight only when nothing waits before it and copies into its own
# bytearray whatever the socket does not take at once.
KEEPS_BUFFERS = sys.version_info >= (3, 12)
# Before 3.12 each piece written to an empty transport is its own send(): a response of at most this many
# bytes is joined and sent at once (copying it costs less than a system call a piece; a Produce response
# comes as two pieces)
JOIN_MAX = 64 * 1024
# Before 3.12, where the system has writev, the pieces go to the socket straight, up to IOV_MAX at a call
# (one system call for a Fetch response's hundreds of batches where asyncio made one send() a piece)
WRITEV = getattr(os, "writev", None) if not KEEPS_BUFFERS else None
IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if WRITEV is not None else 1


async def write_buffers(writer: asyncio.StreamWriter, buffers: Sequence[Any]) -> None:
    """Write buffers in order to an asyncio stream without asyncio copying them whole, and wait as
    ``drain()`` does. Calls on one stream must not overlap (await each before the next).

    From Python 3.12 they go to the transport's ``writelines`` as they are, and this waits until the
    transport has sent them when it holds more than its high-water mark. Before 3.12 the transport would
    copy a whole Fetch response (up to fetch.max.bytes, tens of MB) into fresh memory, copied again as it
    shrinks: so the buffers go to the socket itself with writev (many at a call) while the transport holds
    nothing, and only the part of a buffer the socket cut short goes through the transport, whose copy is
    sent before the next writev (without writev: each buffer waits until the transport is empty); a small
    frame is joined and written at once. Over TLS every byte is copied anyway (encrypted), and asyncio's
    SSL transport pauses at a high-water mark of 0 even when empty (and may not resume): the buffers go in
    at once there. Cancelled while it waits, it hands the rest to the transport at once: a frame is never cut."""
    transport = writer.transport
    if KEEPS_BUFFERS or writer.get_extra_info("ssl_object") is not None:
        write_now(transport, buffers, tls=True)  # (from 3.12 writelines either way)
        if KEEPS_BUFFERS and transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]:
            await _emptied(writer)  # writelines does not pause the protocol itself
        else:
            await writer.drain()
        return
    pieces = _joined_if_small(buffers)
    done = [0]  # pieces[:done[0]] are with the socket or the transport
    try:
        if WRITEV is not None and len(pieces) > 1:
            await _writev(writer, pieces, done)
        else:
            _, high = transport.get_write_buffer_limits()
            for piece in pieces:
                buffered = transport.get_write_buffer_size()
                if buffered and buffered + memoryview(piece).nbytes > high:
                    await _emptied(writer)
                writer.write(piece)
                done[0] += 1
    except asyncio.CancelledError:
        for piece in pieces[done[0]:]:
            transport.write(piece)
        raise
    await writer.drain()


def write_now(transport: Any, buffers: Sequence[Any], tls: bool) -> None:
    """The buffers into the transport without waiting, nothing able to come between them (a client's
    request): from 3.12 as they are (an empty one left out: 3.12.1 keeps it queued after the rest is sent,
    and close() then waits forever); before, a small frame joined, else with writev on the socket while the
    transport holds nothing, the rest handed to the transport (which copies only that); over TLS one by one."""
    if transport.is_closing():  # as asyncio's write: nothing more goes (3.13's writelines would raise TypeError)
        return
    if KEEPS_BUFFERS:
        transport.writelines([b for b in buffers if memoryview(b).nbytes])
        return
    pieces = buffers if tls else _joined_if_small(buffers)
    start = 0
    if WRITEV is not None and not tls and len(pieces) > 1 and not transport.get_write_buffer_size():
        start = _writev_once(transport.get_extra_info("socket"), pieces[:IOV_MAX], transport)
    for piece in pieces[start:]:
        transport.write(piece)


def _joined_if_small(buffers: Sequence[Any]) -> Sequence[Any]:
    return [b"".join(buffers)] if len(buffers) > 1 and _nbytes(buffers) <= JOIN_MAX else buffers


async def _writev(writer: asyncio.StreamWriter, pieces: Sequence[Any], done: list[int]) -> None:
    """Write pieces to the socket itself with writev, only while the transport holds nothing (so the order
    stays); when the socket has no room, the rest of the piece it cut goes through the transport, and the
    next writev waits until the transport has sent it. ``done[0]``: the pieces handed on so far."""
    transport = writer.transport
    sock = transport.get_extra_info("socket")
    while done[0] < len(pieces):
        if transport.get_write_buffer_size():
            await _emptied(writer)
        if transport.is_closing():  # its socket is (or is about to be) closed, its number maybe reused: as
            done[0] = len(pieces)   # asyncio's write, nothing more is written (the caller's drain raises)
            return
        done[0] += _writev_once(sock, pieces[done[0]:done[0] + IOV_MAX], transport)


def _writev_once(sock: Any, chunk: Sequence[Any], transport: Any) -> int:
    """One writev of ``chunk``; the rest of a piece the socket cut short goes to the transport (its unsent
    part copied, as asyncio's write does), which sends it as the socket drains. Returns the pieces handed on."""
    try:
        sent = WRITEV(sock.fileno(), chunk)  # type: ignore[misc]  # the number now, after any await
    except OSError:  # no room now, or a broken connection: the transport's write meets the same error and
        sent = 0     # closes the transport as asyncio does (the waiting requests learn why)
    for i, piece in enumerate(chunk):  # whole pieces sent
        size = memoryview(piece).nbytes
        if sent < size:
            transport.write(memoryview(piece).cast("B")[sent:])
            return i + 1
        sent -= size
    return len(chunk)


async def _emptied(writer: asyncio.StreamWriter) -> None:
    """Return once the transport has handed every byte to the socket: with a high-water mark of 0 the
    transport pauses its protocol until its buffer is empty, and drain() waits for that."""
    transport = writer.transport
    low, high = transport.get_write_buffer_limits()
    transport.set_write_buffer_limits(high=0)
    try:
        await writer.drain()
    finally:
        transport.set_write_buffer_limits(high=high, low=low)


def _nbytes(pieces: Sequence[Any]) -> int:
    nbytes = getattr(pieces, "nbytes", None)  # kcodec.Buffers counts its bytes
    return nbytes if nbytes is not None else sum(memoryview(p).nbytes for p in pieces)
