"""ServerConnection with no sockets: requests out of any chunking, answers back in request order whatever
order they are given in, requests it cannot read handed to the server, and zero copies both ways."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcodec
from kcodec import Buffers
from kcodec.messages import (ApiVersionsRequest, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse,
                             ProduceRequest)
from kcodec.protocol import (ClientConnection, LocalProtocolError, RequestFailed, RequestReceived, ServerConnection,
                             TokenReceived)

from protocol_support import api_versions, joined


def meta(name: str) -> MetadataResponse:
    return MetadataResponse(topics=[MetadataResponse.Topic(name=name)])


def drain(server: ServerConnection) -> list:
    out = []
    while (event := server.next_event()) is not None:
        out.append(event)
    return out


@given(st.lists(st.integers(0, 1000), max_size=10), st.permutations(list(range(6))))
def test_answers_go_out_in_request_order_whatever_order_they_are_given(points, order):
    client, server = ClientConnection(client_id="c"), ServerConnection()
    requests = [client.send(MetadataRequest(topics=[MetadataRequest.Topic(name=str(i))]), 12) for i in range(6)]
    stream = b"".join(joined(r) for r in requests)
    cuts = sorted({p % (len(stream) + 1) for p in points})
    events = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        server.receive_data(stream[a:b])
        events += drain(server)
    assert [e.message.topics[0].name for e in events] == [str(i) for i in range(6)]
    assert all(e.header.client_id == "c" for e in events)
    sent = []
    for i in order:
        server.respond(events[i], meta(str(i)))
        sent.append(server.data_to_send())
    received = client.receive_data(b"".join(b"".join(s) for s in sent))
    assert [e.message.topics[0].name for e in received] == [str(i) for i in range(6)]
    # nothing went out ahead of an earlier answer
    first_ready = order.index(0)
    assert all(s.nbytes == 0 for s in sent[:first_ready]) and server.unanswered == 0


def test_requests_are_decoded_one_at_a_time_so_sasl_v0_tokens_can_follow():
    from kcodec.messages import SaslHandshakeRequest, SaslHandshakeResponse
    client, server = ClientConnection(), ServerConnection()
    hs = client.send(SaslHandshakeRequest(mechanism="PLAIN"), 0)
    token = client.send_token(b"\0u\0p")
    server.receive_data(joined(hs) + joined(token))  # both at once: the second is a bare token, not a request
    first = server.next_event()
    assert isinstance(first, RequestReceived) and first.message.mechanism == "PLAIN"
    server.respond(first, SaslHandshakeResponse(mechanisms=["PLAIN"]))
    server.raw_tokens = True
    second = server.next_event()
    assert isinstance(second, TokenReceived) and second.data == b"\0u\0p"
    server.respond_token(second, b"")
    events = client.receive_data(b"".join(server.data_to_send()))
    assert list(events[0].message.mechanisms) == ["PLAIN"] and events[1].data == b""


def test_acks_0_produce_gets_no_slot_and_unknown_requests_are_the_servers_to_decide():
    client, server = ClientConnection(), ServerConnection()
    fire = client.send(ProduceRequest(acks=0, topic_data=[]), 9)
    unknown = struct.pack(">ihhih", 10, 999, 0, 41, -1)  # api key 999: header readable, body not
    too_new = kcodec.encode_request(ApiVersionsRequest(), 4, 42)
    too_new = too_new[:6] + struct.pack(">h", 99) + too_new[8:]  # ApiVersions v99
    server.receive_data(joined(fire) + unknown + too_new)
    produce, failed, newer = drain(server)
    assert isinstance(produce, RequestReceived) and not produce.expects_response
    assert isinstance(failed, RequestFailed) and failed.api_key == 999
    assert isinstance(failed.error, kcodec.UnsupportedVersionError)
    assert isinstance(newer, RequestFailed) and (newer.api_key, newer.version) == (18, 99)
    with pytest.raises(LocalProtocolError):
        server.respond(produce, None)
    server.skip(failed)
    # Kafka answers an ApiVersions version it lacks with UNSUPPORTED_VERSION at v0, its own range within
    server.respond(newer, api_versions({18: (0, 4)}, error=35), 0)
    out = server.data_to_send().join()
    header, resp = kcodec.decode_response(out, 18, 0)
    assert header.correlation_id == 42 and resp.error_code == 35
    with pytest.raises(LocalProtocolError, match="answered already"):
        server.skip(failed)


def test_a_malformed_header_stops_the_stream():
    server = ServerConnection()
    server.receive_data(struct.pack(">ihh", 4, 3, 12))  # no correlation id
    with pytest.raises(kcodec.DecodeError):
        server.next_event()


def test_produce_records_are_views_of_the_frame_and_fetch_batches_leave_uncopied():
    client, server = ClientConnection(), ServerConnection()
    batch = b"\x01" * 200
    produce = ProduceRequest(acks=1, timeout_ms=10, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    sent = client.send(produce, 9)
    assert any(b is batch for b in sent.buffers)  # the client sends the caller's batch itself
    data = joined(sent)
    server.receive_data(data)
    (event,) = drain(server)
    records = event.message.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is data  # no copy on the way in either
    server.skip(event)
    # A Fetch response whose batches sit apart (as a log keeps them): each goes out as itself.
    fetch = client.send(FetchRequest(), 12)
    server.receive_data(joined(fetch))
    (req,) = drain(server)
    kept = [bytes(records), bytearray(b"\x02" * 100)]
    part = FetchResponse.PartitionData(partition_index=0, records=Buffers(kept))
    server.respond(req, FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])]))
    out = server.data_to_send()
    assert [b for b in out if any(b is k for k in kept)] == kept
    (resp,) = client.receive_data(out.join())
    assert resp.message.responses[0].partitions[0].records == b"".join(kept)


def test_zero_copy_may_name_the_api_keys_decoded_so_and_the_frame_limit_may_rise():
    # A broker keeps Produce's batches as views (its log copies them) and everything else as copies, which
    # hold no receive buffer however long a handler keeps them.
    client, server = ClientConnection(), ServerConnection(zero_copy={ProduceRequest.API_KEY}, max_frame_size=300)
    from kcodec.messages import SaslAuthenticateRequest
    produce = client.send(ProduceRequest(acks=1, timeout_ms=10, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"\x01" * 50)])]), 9)
    auth = client.send(SaslAuthenticateRequest(auth_bytes=b"\x02" * 50), 2)
    server.receive_data(joined(produce) + joined(auth))
    first, second = drain(server)
    assert isinstance(first.message.topic_data[0].partition_data[0].records, memoryview)
    assert type(second.message.auth_bytes) is bytes and second.message.auth_bytes == b"\x02" * 50
    big = client.send(MetadataRequest(topics=[MetadataRequest.Topic(name="x" * 400)]), 12)
    with pytest.raises(kcodec.DecodeError, match="outside 0..300"):
        server.receive_data(joined(big))
    server = ServerConnection(max_frame_size=300)
    server.max_frame_size = 1000  # once the peer has authenticated (Kafka: sasl.server.max.receive.size before)
    server.receive_data(joined(big))
    (event,) = drain(server)
    assert event.message.topics[0].name == "x" * 400 and server.reader.max_frame_size == 1000
