"""kcodec.broker.writes: a response made of pieces reaches a slow reader whole, and the transport never
holds more than about one piece of it (asyncio would copy all that the socket does not take at once)."""

from __future__ import annotations

import asyncio

from kcodec.broker.writes import write_pieces

PIECE = 256 * 1024
HIGH_WATER = 64 * 1024  # asyncio's default high-water mark


def _pieces() -> list:
    # 24 MB, well past what the loopback socket buffers take: header-like bytes between large stored batches
    out: list = []
    for i in range(96):
        out.append(i.to_bytes(4, "big"))
        out.append(bytearray([i % 251]) * PIECE)
    out.append(memoryview(b"tail"))
    return out


def test_pieces_reach_a_slow_reader_whole_with_little_buffered():
    pieces = _pieces()
    buffered: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        transport = writer.transport
        write = transport.write

        def recording(data) -> None:
            write(data)
            buffered.append(transport.get_write_buffer_size())
        transport.write = recording  # type: ignore[method-assign]
        await write_pieces(writer, pieces)
        writer.close()

    async def main() -> bytes:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        async with server:
            reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
            await asyncio.sleep(0.3)  # the reader is late: the sockets fill, the writer must wait
            data = await reader.read()
            writer.close()
            return data

    assert asyncio.run(main()) == b"".join(pieces)
    assert len(buffered) == len(pieces) and max(buffered) <= PIECE + HIGH_WATER
