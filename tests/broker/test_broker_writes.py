"""kcodec_broker.writes: a response made of pieces reaches a slow reader whole, and the transport never
holds a copy of more than about one piece of it (asyncio before 3.12 would copy all that the socket does
not take at once); a Fetch response's batches are the log's own objects when they reach the transport (or,
before 3.12, writev on the socket itself)."""

from __future__ import annotations

import asyncio
import os

from broker_wire import Wire

import kcodec_broker.server as broker_server
import kcodec_broker.writes as writes
from kcodec_broker import Cluster
from kcodec_broker.writes import IOV_MAX, KEEPS_BUFFERS, WRITEV, write_pieces
from kcodec.messages import FetchRequest, ProduceRequest
from kcodec.records import BatchBuilder, iter_batches

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


def _recording(transport, handed: list, calls: list | None = None) -> None:
    """Record each buffer given to the transport (write, writelines) or to writev (before 3.12; each
    call's buffers also in ``calls``), then let the transport or the socket have it."""
    write, writelines = transport.write, transport.writelines
    if WRITEV is not None:
        def recording_writev(fd: int, buffers) -> int:
            buffers = list(buffers)
            handed.extend((b, None) for b in buffers)
            if calls is not None:
                calls.append(buffers)
            return os.writev(fd, buffers)
        writes.WRITEV = recording_writev  # restored by the caller's monkeypatch

    def recording_write(data) -> None:
        handed.append((data, transport.get_write_buffer_size()))
        write(data)

    def recording_writelines(datas) -> None:
        datas = list(datas)
        handed.extend((d, None) for d in datas)
        writelines(datas)
    transport.write, transport.writelines = recording_write, recording_writelines


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
        _recording(writer.transport, handed, calls)
        write = writer.transport.write

        def after(data) -> None:
            write(data)
            buffered.append(writer.transport.get_write_buffer_size())
        writer.transport.write = after  # type: ignore[method-assign]
        await write_pieces(writer, pieces)
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
                await write_pieces(writer, _pieces())
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


def _batch(value: bytes) -> bytes:
    b = BatchBuilder()
    b.append(None, value)
    return b.build()


def test_fetched_batches_are_the_logs_own_objects_at_the_transport(monkeypatch):
    # Issue 29: a Fetch response reaches the socket without its record batches being copied. The batches
    # the log holds must be the very objects the connection hands to the transport (whose write sends from
    # the object itself when nothing waits before it; from Python 3.12 writelines keeps them for sendmsg),
    # after the codec encoded the response around them (kcodec.Buffers).
    handed: list = []
    monkeypatch.setattr(writes, "WRITEV", WRITEV)

    async def recorded(writer, pieces) -> None:
        _recording(writer.transport, handed)
        await write_pieces(writer, pieces)
    monkeypatch.setattr(broker_server, "write_pieces", recorded)
    values = [b"a" * 300_000, b"b", b"c" * 70_000]
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 1, 1)
        with Wire(c.addresses[0]) as w:
            for v in values:
                r = w.call(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
                    name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=_batch(v))])]), 9)
                assert r.responses[0].partition_responses[0].error_code == 0
            handed.clear()
            resp = w.call(FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
                topic="t", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                12)
        stored = c.state.logs.log(c.topics()["t"].topic_id, 0).batches
        records = resp.responses[0].partitions[0].records
        assert [r.value for b in iter_batches(records) for r in b] == values
        assert len(stored) == 3
        for batch in stored:  # by identity: not a copy, not a view of a joined frame
            assert any(obj is batch for obj, _ in handed), f"a stored batch of {len(batch)} bytes was copied"


def test_a_small_response_is_one_write():
    """Before 3.12 a response of at most JOIN_MAX bytes goes to the transport joined (one send, not one a
    piece); from 3.12 writelines sends its pieces with one sendmsg."""
    pieces = [b"\x00\x00\x00\x06", bytearray(b"ab"), memoryview(b"cdef")]
    handed: list = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _recording(writer.transport, handed)
        await write_pieces(writer, pieces)
        writer.close()

    assert _read_all(serve) == b"\x00\x00\x00\x06abcdef"
    assert [bytes(d) for d, _ in handed] == ([bytes(p) for p in pieces] if KEEPS_BUFFERS else [b"\x00\x00\x00\x06abcdef"])
