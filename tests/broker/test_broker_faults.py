"""Hostile and broken clients: the connection at fault is closed, everyone else keeps being served."""

from __future__ import annotations

import dataclasses
import logging
import random
import socket
import struct
import threading
import time

import pytest
from broker_wire import Wire

import kcodec
from kcodec_broker import Cluster
from kcodec_broker import handlers
from kcodec.errors import ErrorCode
from kcodec.messages import ApiVersionsRequest, MetadataRequest


@pytest.fixture
def small():
    with Cluster(brokers=2, system_topic_partitions=1, max_frame_size=64 * 1024) as c:
        c.create_topic("t", 3, 2)
        yield c


def _healthy(cluster: Cluster) -> None:
    for address in cluster.addresses:
        with Wire(address) as w:
            r = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 12)
            assert r.topics[0].error_code == 0 and len(r.topics[0].partitions) == 3


def test_garbage_closes_that_connection_only(small, caplog):
    rng = random.Random(7)
    with caplog.at_level(logging.WARNING, logger="kcodec_broker"):
        with Wire(small.addresses[0]) as good:
            for _ in range(20):
                with Wire(small.addresses[0]) as bad:
                    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(8, 200)))
                    bad.send(struct.pack(">i", len(junk)) + junk)
                    assert bad.closed_by_peer()
                assert good.call(ApiVersionsRequest(), 2).error_code == 0
    assert "closing" in caplog.text
    _healthy(small)


def test_oversized_and_negative_frames_are_refused_before_buffering(small):
    for size in (64 * 1024 + 1, 2**31 - 1, -5):
        with Wire(small.addresses[1]) as bad:
            bad.send(struct.pack(">i", size) + b"\0" * 16)
            assert bad.closed_by_peer()
    _healthy(small)


def test_truncated_body_and_half_frames(small):
    frame = kcodec.encode_request(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 12, correlation_id=1)
    with Wire(small.addresses[0]) as bad:  # a size prefix that says less than the body needs
        bad.send(struct.pack(">i", 10) + frame[4:14])
        assert bad.closed_by_peer()
    for cut in (2, 5, len(frame) // 2, len(frame) - 1):
        s = socket.create_connection(small.addresses[0])
        s.sendall(frame[:cut])
        s.close()
    _healthy(small)


def test_one_byte_at_a_time_is_answered(small):
    frame = kcodec.encode_request(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 12, correlation_id=42,
                                  client_id="slow")
    with Wire(small.addresses[0]) as slow, Wire(small.addresses[1]) as other:
        slow.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(frame)):
            slow.send(frame[i:i + 1])
            if i % 10 == 0:  # the others are served meanwhile
                assert other.call(ApiVersionsRequest(), 1).error_code == 0
        header, resp = kcodec.decode_response(slow.read_frame(), 3, 12)
    assert header.correlation_id == 42 and resp.topics[0].name == "t"


def test_a_failing_handler_answers_unknown_server_error(small, monkeypatch, caplog):
    def broken(ctx, req):
        raise RuntimeError("injected")

    monkeypatch.setitem(handlers.HANDLERS, 3, dataclasses.replace(handlers.HANDLERS[3], fn=broken))
    with caplog.at_level(logging.ERROR, logger="kcodec_broker"), Wire(small.addresses[0]) as w:
        r = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 13)
        assert r.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert r.topics[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR and r.topics[0].name == "t"
        assert w.call(ApiVersionsRequest(), 3).error_code == ErrorCode.INVALID_REQUEST  # same connection still served
    assert "injected" in caplog.text


def test_faults_while_others_are_served(small):
    errors: list[BaseException] = []
    served = [0]
    stop = threading.Event()

    def steady():
        try:
            with Wire(small.addresses[1]) as w:
                while not stop.is_set():
                    assert w.call(MetadataRequest(topics=None), 9).topics
                    served[0] += 1
        except BaseException as e:  # reported below
            errors.append(e)

    worker = threading.Thread(target=steady)
    worker.start()
    try:
        rng = random.Random(3)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            s = socket.create_connection(small.addresses[rng.randrange(2)])
            kind = rng.randrange(3)
            if kind == 0:
                s.sendall(bytes(rng.randrange(256) for _ in range(64)))
            elif kind == 1:
                s.sendall(struct.pack(">i", 1 << 30))
            else:
                s.sendall(kcodec.encode_request(ApiVersionsRequest(), 3, correlation_id=1)[:9])
            s.close()
    finally:
        stop.set()
        worker.join(timeout=10)
    assert not errors and served[0] > 10
    _healthy(small)


def test_pipelined_requests_are_answered_in_order(small):
    frames = b"".join(kcodec.encode_request(MetadataRequest(topics=None), 12, correlation_id=i, client_id="pipe")
                      for i in range(500))
    with Wire(small.addresses[0], timeout=20) as w:
        w.send(frames)
        ids = [kcodec.decode_response(w.read_frame(), 3, 12)[0].correlation_id for _ in range(500)]
    assert ids == list(range(500))
