"""kcodec.protocol.writes (``kcodec.protocol.aio.write_buffers``): a frame made of buffers reaches a slow
reader whole, the transport never holds a copy of more than about one buffer of it (asyncio before 3.12
would join them all and copy what the socket does not take at once), a cancelled write still writes the
whole frame, and a closed connection gets nothing."""

from __future__ import annotations

import asyncio

import pytest
from transport_recording import record_writes

import kcodec
import kcodec.protocol.writes as writes
from kcodec.protocol.aio import write_buffers
from kcodec.protocol.writes import IOV_MAX, KEEPS_BUFFERS, WRITEV

PIECE = 256 * 1024
HIGH_WATER = 64 * 1024  # asyncio's default high-water mark


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def _pieces() -> list:
    # 24 MB, well past what the loopback socket buffers take: header-like bytes between large stored batches
    out: list = []
    for i in range(96):
        out.append(i.to_bytes(4, "big"))
        out.append(bytearray([i % 251]) * PIECE)
    out.append(memoryview(b"tail"))
    return out


def _read_all(serve, late: float = 0.0) -> bytes:
    """What a client of a server running ``serve`` reads to the end, ``late`` seconds after connecting."""
    async def main() -> bytes:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        async with server:
            reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
            await asyncio.sleep(late)
            data = await reader.read()
            writer.close()
            return data
    return asyncio.run(main())


def test_pieces_reach_a_slow_reader_whole_with_little_buffered(monkeypatch):
    monkeypatch.setattr(writes, "WRITEV", WRITEV)
    pieces = _pieces()
    handed: list = []
    calls: list = []
    buffered: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record_writes(writer.transport, handed, calls)
        write = writer.transport.write

        def after(data) -> None:
            write(data)
            buffered.append(writer.transport.get_write_buffer_size())
        writer.transport.write = after  # type: ignore[method-assign]
        await write_buffers(writer, pieces)
        writer.close()

    assert _read_all(serve, late=0.3) == b"".join(pieces)  # a late reader: the sockets fill, the writer waits
    if WRITEV is None:
        assert [d for d, _ in handed] == pieces and all(d is p for (d, _), p in zip(handed, pieces))
    if not KEEPS_BUFFERS:  # after the transport's copy (at most one piece) has drained
        assert max(buffered) <= PIECE + HIGH_WATER
    if WRITEV is None and not KEEPS_BUFFERS:  # each piece written on its own
        assert len(buffered) == len(pieces)
    if WRITEV is not None:
        # every piece goes to writev itself, the first call takes them all (up to IOV_MAX), and the
        # transport only ever gets the rest of a piece the socket cut short, a view of it
        assert calls[0] == pieces[:IOV_MAX] and all(a is b for a, b in zip(calls[0], pieces))
        assert all(any(b is p for p in pieces) for call in calls for b in call)
        rests = [d for d, n in handed if n is not None]
        assert all(isinstance(d, memoryview) and any(d.obj is p for p in pieces) for d in rests)
        assert rests and len(rests) <= len(calls)  # the late reader made the socket cut pieces short


def test_a_closed_connection_gets_nothing_more():
    """A response written once the transport is closing (the client went away while a fetch waited) writes
    nothing, and fails only as a lost connection does (never on a closed or reused socket number)."""
    async def main() -> tuple[bytes, object]:
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.transport.close()
            await asyncio.sleep(0.05)  # the transport has closed its socket by now
            try:
                await write_buffers(writer, _pieces())
                done.set_result(None)
            except Exception as e:  # noqa: BLE001 - which exception is the point
                done.set_result(e)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        async with server:
            reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
            outcome = await asyncio.wait_for(done, 10)
            data = await reader.read()
            writer.close()
            return data, outcome

    data, outcome = asyncio.run(main())
    assert data == b""
    assert outcome is None or isinstance(outcome, ConnectionError), outcome


def test_a_small_response_is_one_write():
    """Before 3.12 a response of at most JOIN_MAX bytes goes to the transport joined (one send, not one a
    piece); from 3.12 writelines sends its pieces with one sendmsg."""
    pieces = [b"\x00\x00\x00\x06", bytearray(b"ab"), memoryview(b"cdef")]
    handed: list = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record_writes(writer.transport, handed)
        await write_buffers(writer, pieces)
        writer.close()

    assert _read_all(serve) == b"\x00\x00\x00\x06abcdef"
    assert [bytes(d) for d, _ in handed] == ([bytes(p) for p in pieces] if KEEPS_BUFFERS else [b"\x00\x00\x00\x06abcdef"])


def _stream_pair_with_slow_reader(expected: bytes, seen: dict):
    """A stream writer to 127.0.0.1 whose peer reads 256 KiB at a time with pauses, comparing what comes with
    ``expected`` as it goes (keeping none of it: the write's memory is measured); ``seen``: bytes and mismatches."""
    async def pair():
        done = asyncio.get_running_loop().create_future()
        seen.update(n=0, wrong=0)

        async def serve(reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            view = memoryview(expected)
            while seen["n"] < len(expected) and (chunk := await reader.read(1 << 18)):
                seen["wrong"] += chunk != view[seen["n"]:seen["n"] + len(chunk)]
                seen["n"] += len(chunk)
                await asyncio.sleep(0.001)
            w.close()
            done.set_result(None)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        return server, writer, done
    return pair()


def test_write_buffers_sends_many_large_buffers_without_joining_them():
    import tracemalloc

    async def main():
        parts = kcodec.Buffers([bytes([i]) * (1 << 20) for i in range(16)])  # a 16 MB Fetch response's batches
        seen: dict = {}
        server, writer, done = await _stream_pair_with_slow_reader(parts.join(), seen)
        tracemalloc.start()
        try:
            await write_buffers(writer, parts)
            await done
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            writer.close()
            server.close()
        assert seen == {"n": parts.nbytes, "wrong": 0}
        # writelines before 3.12 joined all 16 MB (and kept what the socket had not taken); here at most about
        # one batch is copied at a time (the part of it the socket does not take at once)
        assert peak < 4 * (1 << 20), peak
    run(main())


def test_a_cancelled_write_buffers_still_writes_the_whole_frame():
    async def main():
        parts = [bytes([i]) * (1 << 20) for i in range(8)]
        seen: dict = {}
        server, writer, done = await _stream_pair_with_slow_reader(b"".join(parts), seen)
        try:
            task = asyncio.ensure_future(write_buffers(writer, parts))
            await asyncio.sleep(0.005)  # waiting for the transport to empty, part of the buffers written
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await writer.drain()
            await done
        finally:
            writer.close()
            server.close()
        assert seen == {"n": 8 << 20, "wrong": 0}
    run(main())
