"""Writing a response given as buffers (a ServerConnection's ``data_to_send``: a Fetch response's codec bytes
with the log's stored batches between them) to an asyncio stream, without copying the batches."""

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


async def write_pieces(writer: asyncio.StreamWriter, pieces: list[Any]) -> None:
    """Write a response's buffers in order without asyncio copying them.

    From Python 3.12 they go to the transport's ``writelines`` as they are, and this waits until the
    transport has sent them when it holds more than its high-water mark. Before 3.12 the transport would
    copy a whole Fetch response (up to fetch.max.bytes, tens of MB) into fresh memory, copied again as it
    shrinks: so the pieces go to the socket itself with writev (many at a call) while the transport holds
    nothing, and only the part of a piece the socket cut short goes through the transport, whose copy is
    sent before the next writev (without writev: each piece waits until the transport is empty); a small
    response is joined and written at once. Over TLS
    every byte is copied anyway (encrypted), and asyncio's SSL transport pauses at a high-water mark of 0
    even when empty (and may not resume): pieces go in at once there."""
    transport = writer.transport
    if writer.get_extra_info("ssl_object") is not None:
        for piece in pieces:
            writer.write(piece)
        await writer.drain()
        return
    _, high = transport.get_write_buffer_limits()
    if KEEPS_BUFFERS:
        transport.writelines(pieces)
        if transport.get_write_buffer_size() > high:  # writelines does not pause the protocol itself
            await _emptied(writer)
        return
    if len(pieces) > 1 and _nbytes(pieces) <= JOIN_MAX:
        pieces = [b"".join(pieces)]
    elif WRITEV is not None:
        await _writev(writer, pieces)
        await writer.drain()
        return
    for piece in pieces:
        buffered = transport.get_write_buffer_size()
        if buffered and buffered + len(piece) > high:
            await _emptied(writer)
        writer.write(piece)
    await writer.drain()


async def _writev(writer: asyncio.StreamWriter, pieces: Sequence[Any]) -> None:
    """Write pieces to the socket itself with writev, only while the transport holds nothing (so the order
    stays); when the socket has no room, the rest of the piece it cut goes through the transport, and the
    next writev waits until the transport has sent it."""
    transport = writer.transport
    sock = transport.get_extra_info("socket")
    start = 0
    while start < len(pieces):
        if transport.get_write_buffer_size():
            await _emptied(writer)
        if transport.is_closing():  # its socket is (or is about to be) closed, its number maybe reused: as
            return                  # asyncio's write, nothing more is written (the caller's drain raises)
        chunk = pieces[start:start + IOV_MAX]
        try:
            sent = WRITEV(sock.fileno(), chunk)  # type: ignore[misc]  # the number now, after any await
        except (BlockingIOError, InterruptedError):
            sent = 0
        for piece in chunk:  # whole pieces sent
            size = memoryview(piece).nbytes
            if sent < size:
                break
            sent -= size
            start += 1
        else:
            continue
        # the socket is full: the rest of the cut piece goes to the transport (its unsent part copied,
        # as asyncio's write does), which sends it as the socket drains; then writev again
        rest = memoryview(pieces[start]).cast("B")[sent:]
        start += 1
        writer.write(rest)


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


def _nbytes(pieces: list[Any]) -> int:
    nbytes = getattr(pieces, "nbytes", None)  # kcodec.Buffers counts its bytes
    return nbytes if nbytes is not None else sum(memoryview(p).nbytes for p in pieces)
