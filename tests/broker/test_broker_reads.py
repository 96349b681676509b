"""The broker receives requests straight into each connection's frame buffer (kcodec_broker/inbound.py):
a Produce's batch reaches the log from the bytes the socket wrote, requests split or joined any way are
answered in order, and reading pauses while a whole request waits on a busy task, as Kafka mutes a
connection."""

from __future__ import annotations

import asyncio
import logging
import struct
import time

from broker_wire import Wire

import kcodec
from kcodec.messages import ApiVersionsRequest, MetadataRequest, ProduceRequest
from kcodec.protocol import ServerConnection
from kcodec.records import BatchBuilder, iter_batches
from kcodec_broker import Cluster
from kcodec_broker.inbound import Inbound


def _produce(value: bytes, correlation: int) -> bytes:
    b = BatchBuilder()
    b.append(None, value)
    req = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b.build())])])
    return kcodec.encode_request(req, 9, correlation_id=correlation, client_id="reads")


def test_requests_split_and_joined_any_way_are_answered_in_order():
    values = [b"a" * 700_000, b"b", b"c" * 70_000, b"d" * 3]
    frames = [_produce(v, i + 1) for i, v in enumerate(values)]
    stream = b"".join(frames)
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 1, 1)
        with Wire(c.addresses[0]) as w:
            # the first request a byte at a time, the rest in pieces that cut every frame
            for i in range(len(frames[0]) - 1):
                if i < 64:
                    w.send(stream[i:i + 1])
                    time.sleep(0.001)
            w.send(stream[64:len(frames[0]) + 10])
            rest = stream[len(frames[0]) + 10:]
            for i in range(0, len(rest), 4093):
                w.send(rest[i:i + 4093])
            answers = [kcodec.decode_response(w.read_frame(), ProduceRequest.API_KEY, 9) for _ in values]
        assert [h.correlation_id for h, _ in answers] == [1, 2, 3, 4]
        assert [r.responses[0].partition_responses[0].base_offset for _, r in answers] == [0, 1, 2, 3]
        stored = c.state.logs.log(c.topics()["t"].topic_id, 0).batches
        assert [r.value for batch in stored for b in iter_batches(bytes(batch)) for r in b] == values


def test_a_bad_size_prefix_after_good_requests_closes_the_connection_once_they_are_answered(caplog):
    good = kcodec.encode_request(MetadataRequest(topics=[]), 12, correlation_id=1, client_id="reads")
    with caplog.at_level(logging.WARNING, logger="kcodec_broker"), Cluster(brokers=1, system_topic_partitions=1) as c:
        with Wire(c.addresses[0]) as w:
            w.send(good + struct.pack(">i", -5) + b"junk")
            header, _ = kcodec.decode_response(w.read_frame(), MetadataRequest.API_KEY, 12)
            assert header.correlation_id == 1
            assert w.sock.recv(1) == b""  # closed
    assert any("bad frame" in r.getMessage() for r in caplog.records)


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return False


class _Writer:
    def __init__(self, transport: _Transport) -> None:
        self.transport = transport


def _receive(inbound: Inbound, data: bytes) -> None:
    room = inbound.get_buffer(-1)
    room[:len(data)] = data
    inbound.buffer_updated(len(data))


def test_reading_pauses_while_a_whole_request_waits_on_a_busy_task_and_resumes_when_it_waits_again():
    async def go() -> None:
        conn = ServerConnection()
        inbound = Inbound(conn, lambda reader, writer: None)
        transport = _Transport()
        inbound.writer = _Writer(transport)  # type: ignore[assignment]
        frame = kcodec.encode_request(ApiVersionsRequest(), 0, correlation_id=7, client_id="reads")
        _receive(inbound, frame[:5])
        assert transport.reading and conn.frames_waiting == 0  # half a request: go on reading
        _receive(inbound, frame[5:] + frame[:3])
        assert not transport.reading and conn.frames_waiting == 1  # a request waits: muted
        await inbound.wait(1.0)  # returns at once: a request waits
        assert not transport.reading
        conn.next_event()
        waiting = asyncio.ensure_future(inbound.wait(5.0))
        await asyncio.sleep(0)
        assert transport.reading and not waiting.done()  # nothing waits: reading again, until the rest comes
        _receive(inbound, frame[3:])
        await asyncio.wait_for(waiting, 1.0)
        assert conn.frames_waiting == 1 and transport.reading  # the waiting task takes it at once: not muted
        conn.next_event()  # served meanwhile:
        _receive(inbound, frame)  # a pipelined request waits behind it
        assert conn.frames_waiting == 1 and not transport.reading
    asyncio.run(go())


def test_a_request_still_coming_in_keeps_the_connection_from_being_idle():
    async def go() -> None:
        conn = ServerConnection()
        inbound = Inbound(conn, lambda reader, writer: None)
        inbound.writer = _Writer(_Transport())  # type: ignore[assignment]
        frame = kcodec.encode_request(ApiVersionsRequest(), 0, correlation_id=7, client_id="reads")
        try:
            await inbound.wait(0.05)
            raise AssertionError("no TimeoutError with nothing received")
        except asyncio.TimeoutError:
            pass
        waiting = asyncio.ensure_future(inbound.wait(0.4))
        await asyncio.sleep(0.3)
        _receive(inbound, frame[:5])  # part of a request: activity
        await asyncio.sleep(0.3)  # 0.6 s after the wait began, 0.3 s after the last bytes
        assert not waiting.done()
        _receive(inbound, frame[5:])
        await asyncio.wait_for(waiting, 1.0)
        assert conn.frames_waiting == 1
    asyncio.run(go())
