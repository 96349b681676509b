"""What an unauthenticated or re-authenticating peer cannot do to a SASL listener: frames over Kafka's
sasl.server.max.receive.size before authentication, a huge user name echoed into an unencodable error,
requests slipped into a re-authentication exchange."""

from __future__ import annotations

import struct

import pytest
from broker_wire import Wire, authenticated

import kcodec
from kcodec_broker import Cluster
from kcodec.errors import ErrorCode
from kcodec.messages import MetadataRequest, ProduceRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kcodec.records import BatchBuilder
from kcodec.protocol.sasl.scram import ScramClient

USERS = {"alice": "alice-pw"}
LONG_NAME = "u" * 40_000


@pytest.fixture(scope="module")
def cluster():
    with Cluster(users=USERS, sasl_mechanisms=["PLAIN", "SCRAM-SHA-256"], reauth_ms=60_000,
                 system_topic_partitions=1) as c:
        c.create_topic("t", 1, 1)
        yield c


def _padded_metadata(total: int) -> bytes:
    """A Metadata v12 frame of ``total`` bytes (its body padded with tagged-field-free trailing bytes is
    not valid, but the size prefix is what the limit reads first)."""
    frame = kcodec.encode_request(MetadataRequest(topics=[]), 12, correlation_id=1, client_id="big")
    return struct.pack(">i", total - 4) + frame[4:] + b"\0" * (total - len(frame))


def test_a_frame_over_the_pre_authentication_limit_closes_the_connection(cluster):
    with Wire(cluster.addresses[0]) as w:
        w.send(struct.pack(">i", 512 * 1024 + 1))  # the size alone: nothing is buffered for it
        assert w.closed_by_peer()
    with Wire(cluster.addresses[0]) as w:  # at the limit the frame is read (and, being no SASL request, refused)
        w.send(_padded_metadata(512 * 1024 + 4))
        assert w.closed_by_peer()


def test_after_authentication_the_frame_limit_is_max_frame_size(cluster):
    big = BatchBuilder()
    big.append(None, b"x" * (600 * 1024))
    req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=big.build())])])
    with authenticated(cluster, "alice", "alice-pw") as w:
        p = w.call(req, 9).responses[0].partition_responses[0]
        assert p.error_code == 0


def test_the_limit_is_configurable():
    with Cluster(users=USERS, system_topic_partitions=1, sasl_max_receive_size=1024) as c:
        with Wire(c.addresses[0]) as w:
            w.send(struct.pack(">i", 1025))
            assert w.closed_by_peer()
        with authenticated(c, "alice", "alice-pw") as w:  # a 1 KiB limit still lets PLAIN through
            assert w.call(MetadataRequest(topics=[]), 12).brokers
    with pytest.raises(ValueError, match="sasl_max_receive_size"):
        Cluster(users=USERS, sasl_max_receive_size=0)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_40kb_user_name_gets_an_answer_before_the_close(cluster, mechanism):
    with Wire(cluster.addresses[0], timeout=10.0) as w:
        assert w.call(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
        token = (f"\0{LONG_NAME}\0pw".encode() if mechanism == "PLAIN"
                 else ScramClient(mechanism, LONG_NAME, "pw").first())
        r = w.call(SaslAuthenticateRequest(auth_bytes=token), 2)
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert len(r.error_message.encode()) < 32_767 and "more characters" in r.error_message
        assert w.closed_by_peer()


def test_a_request_inside_a_reauthentication_exchange_closes_the_connection(cluster):
    with authenticated(cluster, "alice", "alice-pw") as w:
        assert w.call(MetadataRequest(topics=[]), 12).brokers  # served between exchanges
        assert w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0  # re-authentication begins
        w.send(kcodec.encode_request(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[]), 9, correlation_id=99))
        assert w.closed_by_peer()
