"""Writing a response made of pieces (handlers.Encoded: a Fetch response's codec bytes with the stored
batches between them) to an asyncio stream, without copying the pieces into the transport's buffer."""

from __future__ import annotations

import asyncio
from typing import Any


async def write_pieces(writer: asyncio.StreamWriter, pieces: list[Any]) -> None:
    """Write a response's pieces (handlers.Encoded) in order without asyncio copying them all.

    The transport sends a piece straight from the caller's buffer only when nothing waits before it, and
    copies into its own buffer whatever the socket does not take at once: a whole Fetch response (up to
    fetch.max.bytes, tens of MB) into fresh memory, copied again as it shrinks. So a piece that would push
    the buffer past its high-water mark waits until the buffer is empty; small pieces are still coalesced.
    Over TLS every byte is copied anyway (encrypted), and asyncio's SSL transport pauses at a high-water
    mark of 0 even when empty (and may not resume): pieces go in at once there."""
    transport = writer.transport
    if writer.get_extra_info("ssl_object") is not None:
        for piece in pieces:
            writer.write(piece)
        await writer.drain()
        return
    _, high = transport.get_write_buffer_limits()
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
