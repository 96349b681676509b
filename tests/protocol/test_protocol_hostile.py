"""Hostile bytes into the protocol layer: whatever a peer sends, a connection gives events or a kcodec error
(KcodecError: what, and where), never another exception, a hang, or an allocation its limits do not allow."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from kcodec import KcodecError
from kcodec.messages import MetadataRequest, ProduceRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kcodec.protocol import ClientConnection, ServerConnection
from kcodec.protocol.sasl import OAuthBearerServer, PlainServer, SaslServer, ScramServerMechanism

from protocol_support import answer, joined
from test_protocol_client import meta


def mutated(data: bytes) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw):
        b = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            if not b:
                break
            i = draw(st.integers(0, len(b) - 1))
            b[i] = draw(st.integers(0, 255))
        cut = draw(st.integers(0, len(b)))
        return bytes(b[:cut]) if draw(st.booleans()) else bytes(b)
    return build()


def requests(conn: ClientConnection) -> list:
    return [conn.send(MetadataRequest(topics=None), 12) for _ in range(3)]


CLIENT_STREAM = b"".join(answer(r, meta(str(r.correlation_id))) for r in requests(ClientConnection()))


@given(st.one_of(st.binary(max_size=200), mutated(CLIENT_STREAM)), st.integers(1, 50))
def test_the_client_side_gives_events_or_kcodec_errors(data, chunk):
    conn = ClientConnection(max_frame_size=4096)
    requests(conn)  # the answers above are theirs, before mutation
    try:
        for i in range(0, len(data), chunk):
            conn.receive_data(data[i:i + chunk])
    except KcodecError:
        pass
    assert conn.reader.pending <= 4096 + 4 + chunk  # nothing beyond what the frame limit allows is held


SERVER_STREAM = b"".join(joined(r) for r in (
    ClientConnection().send(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 12),
    ClientConnection().send(ProduceRequest(acks=1, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"x" * 20)])]), 9),
    ClientConnection().send(SaslHandshakeRequest(mechanism="PLAIN"), 1),
))


@given(st.one_of(st.binary(max_size=200), mutated(SERVER_STREAM)))
def test_the_server_side_gives_events_or_kcodec_errors(data):
    conn = ServerConnection(max_frame_size=4096)
    try:
        conn.receive_data(data)
        while conn.next_event() is not None:
            pass
    except KcodecError:
        pass


@given(st.sampled_from(["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]), st.lists(st.binary(max_size=80), max_size=4))
def test_a_sasl_server_refuses_garbage_with_kafka_errors(mechanism, tokens):
    sasl = SaslServer({"PLAIN": lambda: PlainServer(lambda u, p: False),
                       "SCRAM-SHA-256": lambda: ScramServerMechanism("SCRAM-SHA-256", lambda u: None),
                       "OAUTHBEARER": lambda: OAuthBearerServer()})
    assert sasl.handshake(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    for token in tokens:
        resp = sasl.authenticate(SaslAuthenticateRequest(auth_bytes=token), 2)
        if resp.error_code:
            assert sasl.close_after_response and not sasl.authenticated
            break
    assert not sasl.authenticated


def test_a_huge_size_prefix_is_refused_before_anything_is_allocated():
    conn = ServerConnection(max_frame_size=1 << 20)
    try:
        conn.receive_data(struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 10)
    except KcodecError as e:
        assert "outside 0..1048576" in str(e)
    else:
        raise AssertionError("a 2 GiB frame was accepted")
    assert len(conn.reader.get_buffer(0)) < 1 << 20
