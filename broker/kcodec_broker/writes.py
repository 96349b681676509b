"""Writing a response given as buffers (a ServerConnection's ``data_to_send``: a Fetch response's codec bytes
with the log's stored batches between them) to an asyncio stream, without copying the batches."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

# Python 3.12+: the socket transport keeps the buffers it is given (a deque, no copy) and sends them with
# sendmsg; before, it sends a buffer straight only when nothing waits before it and copies into its own
# bytearray whatever the socket does not take at once.
KEEPS_BUFFERS = sys.version_info >= (3, 12)
# Before 3.12 each piece written to an empty transport is its own send(): a response of at most this many
# bytes is joined and sent at once (copying it costs less than a system call a piece; a Produce response
# comes as two pieces)
JOIN_MAX = 64 * 1024


async def write_pieces(writer: asyncio.StreamWriter, pieces: list[Any]) -> None:
    """Write a response's buffers in order without asyncio copying them.

    From Python 3.12 they go to the transport's ``writelines`` as they are, and this waits until the
    transport has sent them when it holds more than its high-water mark. Before 3.12 the transport would
    copy a whole Fetch response (up to fetch.max.bytes, tens of MB) into fresh memory, copied again as it
    shrinks: so a piece that would push the buffer past its high-water mark waits until the buffer is
    empty (then the socket sends from the piece itself), and small pieces are still coalesced. Over TLS
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
    for piece in pieces:
        buffered = transport.get_write_buffer_size()
        if buffered and buffered + len(piece) > high:
            await _emptied(writer)
        writer.write(piece)
    await writer.drain()


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
