"""The thin adapters over real sockets on 127.0.0.1: asyncio (a BufferedProtocol, and streams) and blocking
sockets (sendmsg), against a small server made of a ServerConnection; pipelining, timeouts, broken streams."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any, Optional

import pytest

import kcodec
from kcodec.messages import (ApiVersionsRequest, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
                             SaslAuthenticateRequest, SaslHandshakeRequest)
from kcodec.protocol import RequestReceived, Sasl, ServerConnection
from kcodec.protocol.aio import from_streams, open_connection, write_buffers
from kcodec.protocol.blocking import BlockingConnection, send_buffers
from kcodec.protocol.sasl import PlainServer, SaslServer

from protocol_support import api_versions

APIS = {0: (3, 11), 3: (0, 12), 17: (0, 1), 18: (0, 4), 36: (0, 2)}


def reply_for(sasl: SaslServer, event: RequestReceived) -> Any:
    msg = event.message
    if isinstance(msg, ApiVersionsRequest):
        return api_versions(APIS)
    if isinstance(msg, SaslHandshakeRequest):
        return sasl.handshake(msg, event.version)
    if isinstance(msg, SaslAuthenticateRequest):
        return sasl.authenticate(msg, event.version)
    if isinstance(msg, ProduceRequest):
        records = msg.topic_data[0].partition_data[0].records
        return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name=f"{len(records)}")])
    if msg.topics and msg.topics[0].name == "silent":
        return None  # never answered (a broker that hangs)
    if msg.topics and msg.topics[0].name == "garbage":
        return b"\xff\xff\xff\xff"
    return MetadataResponse(topics=[MetadataResponse.Topic(name=t.name) for t in msg.topics or []])


class Server:
    """An asyncio server on 127.0.0.1 made of a ServerConnection per client (answers in request order)."""

    def __init__(self) -> None:
        self.sasl = SaslServer({"PLAIN": lambda: PlainServer(lambda u, p: (u, p) == ("alice", "secret"))})
        self.server: Optional[asyncio.AbstractServer] = None
        self.port = 0

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = ServerConnection()
        try:
            while data := await reader.read(65536):
                conn.receive_data(data)
                while (event := conn.next_event()) is not None:
                    reply = reply_for(self.sasl, event)
                    if isinstance(reply, bytes):
                        writer.write(reply)
                    elif reply is not None and event.expects_response:
                        conn.respond(event, reply)
                    elif event.expects_response:
                        conn.skip(event)  # (held back: answers after it wait, as in Kafka they would not come)
                await write_buffers(writer, conn.data_to_send())
        except ConnectionError:
            pass
        finally:
            writer.close()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def topics(*names: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.Topic(name=n) for n in names])


@pytest.mark.parametrize("kind", ["protocol", "streams"])
def test_asyncio_pipelines_negotiates_and_authenticates(kind):
    async def main():
        async with Server() as server:
            if kind == "protocol":
                conn = await open_connection("127.0.0.1", server.port, client_id="aio")
            else:
                conn = from_streams(*await asyncio.open_connection("127.0.0.1", server.port), client_id="aio")
            try:
                versions = await conn.negotiate()
                assert versions.pick(MetadataRequest) == 12
                auth = await conn.authenticate(Sasl("PLAIN", "alice", "secret"))
                assert auth.done
                answers = await asyncio.gather(*(conn.request(topics(str(i))) for i in range(20)))
                assert [a.message.topics[0].name for a in answers] == [str(i) for i in range(20)]
                batch = b"b" * 100_000
                produce = ProduceRequest(acks=1, timeout_ms=10, topic_data=[ProduceRequest.TopicProduceData(
                    name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
                assert (await conn.request(produce)).message.responses[0].name == "100000"
            finally:
                await conn.close()
            assert conn.closed
            with pytest.raises(ConnectionError):
                await conn.request(topics("late"))
    run(main())


def test_asyncio_timeout_abandons_and_the_connection_goes_on():
    async def main():
        async with Server() as server:
            conn = await open_connection("127.0.0.1", server.port)
            try:
                await conn.negotiate()
                with pytest.raises(asyncio.TimeoutError):
                    await conn.request(topics("silent"), timeout=0.2)
                assert conn.conn.in_flight == 0 and not conn.closed
            finally:
                await conn.close()
    run(main())


def test_asyncio_a_broken_stream_fails_every_waiting_request():
    async def main():
        async with Server() as server:
            conn = await open_connection("127.0.0.1", server.port)
            try:
                await conn.negotiate()
                silent = asyncio.ensure_future(conn.request(topics("silent")))
                await asyncio.sleep(0.05)
                with pytest.raises(kcodec.DecodeError, match="frame size -1 is outside"):
                    await conn.request(topics("garbage"))
                with pytest.raises(kcodec.DecodeError):
                    await silent
                assert conn.closed
            finally:
                await conn.close()
    run(main())


def serve_in_thread(server_sock: socket.socket) -> threading.Thread:
    """The same server, blocking, on one accepted socket."""
    sasl = SaslServer({"PLAIN": lambda: PlainServer(lambda u, p: (u, p) == ("alice", "secret"))})

    def loop() -> None:
        peer, _ = server_sock.accept()
        conn = ServerConnection()
        with peer:
            while True:
                room = conn.get_buffer()
                n = peer.recv_into(room)
                if not n:
                    return
                conn.buffer_updated(n)
                while (event := conn.next_event()) is not None:
                    reply = reply_for(sasl, event)
                    if event.expects_response:
                        conn.respond(event, reply)
                send_buffers(peer, conn.data_to_send())

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def test_blocking_sockets_with_sendmsg():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = serve_in_thread(listener)
        port = listener.getsockname()[1]
        with BlockingConnection.connect("127.0.0.1", port, timeout=10, client_id="blk") as conn:
            conn.negotiate()
            conn.authenticate(Sasl("PLAIN", "alice", "secret"))
            sent = [conn.conn.send(topics(str(i))) for i in range(5)]  # pipelined, then collected
            for r in sent:
                conn.send(r)
            assert [conn.wait(r).message.topics[0].name for r in reversed(sent)] == ["4", "3", "2", "1", "0"]
            parts = kcodec.Buffers([b"x" * 70_000, bytearray(b"y" * 70_000)])
            produce = ProduceRequest(acks=1, timeout_ms=10, topic_data=[ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=parts)])])
            assert conn.request(produce).message.responses[0].name == "140000"
            fire = ProduceRequest(acks=0, timeout_ms=10, topic_data=produce.topic_data)
            assert conn.request(fire).message is None  # acks=0: nothing to wait for
            assert conn.request(topics("after")).message.topics[0].name == "after"
        thread.join(10)


def test_send_buffers_writes_many_buffers_whole():
    a, b = socket.socketpair()
    with a, b:
        buffers = [bytes([i % 256]) * (i % 50) for i in range(3000)]  # more than IOV_MAX, some empty
        expected = b"".join(buffers)
        got = bytearray()

        def read() -> None:
            while len(got) < len(expected):
                got.extend(b.recv(1 << 16))

        t = threading.Thread(target=read)
        t.start()
        a.setblocking(True)
        send_buffers(a, buffers)
        t.join(10)
        assert bytes(got) == expected
