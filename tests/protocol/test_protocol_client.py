"""ClientConnection with no sockets: request frames (ids, headers), responses in any chunking matched to their
requests, the errors of a broken exchange, in-flight limits, abandoned requests, ApiVersions negotiation."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcodec
from kcodec.messages import (ApiVersionsResponse, ControlledShutdownRequest, ListTopicsRequest, ListTopicsResponse,
                             MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse)
from kcodec.protocol import (ClientConnection, DuplicateCorrelationIdError, InFlightLimitError, Response,
                             ResponseError, ResponseFailed, UnknownCorrelationIdError, UnsupportedApiError)

from protocol_support import answer, api_versions, joined

APIS = {0: (3, 11), 3: (0, 12), 18: (0, 4), 7: (0, 3)}


def negotiated(**kw) -> ClientConnection:
    conn = ClientConnection(**kw)
    neg = conn.negotiation()
    req = neg.start()
    assert neg.receive(conn.receive_data(answer(req, api_versions(APIS), 0))[0]) is None
    return conn


def meta(name: str = "t") -> MetadataResponse:
    return MetadataResponse(topics=[MetadataResponse.Topic(name=name)])


def test_requests_are_framed_as_kafka_frames_them():
    conn = ClientConnection(client_id="me")
    a = conn.send(MetadataRequest(topics=None), 12)
    b = conn.send(MetadataRequest(topics=None), 1)
    c = conn.send(ControlledShutdownRequest(broker_id=1), 0)  # request header v0: no client id
    assert [r.correlation_id for r in (a, b, c)] == [0, 1, 2]  # Kafka's NetworkClient counts from 0
    assert joined(a) == kcodec.encode_request(MetadataRequest(topics=None), 12, 0, "me")
    assert joined(b) == kcodec.encode_request(MetadataRequest(topics=None), 1, 1, "me")
    assert joined(c) == kcodec.encode_request(ControlledShutdownRequest(broker_id=1), 0, 2, "me")
    header, _, _ = kcodec.decode_request_header(joined(c))
    assert header.client_id == ""  # (v0 has none)
    assert a.buffers.nbytes == len(joined(a)) and a.api == "Metadata"


@given(st.lists(st.integers(0, 400), max_size=10), st.permutations(list(range(5))))
def test_answers_in_any_order_and_chunking_reach_their_requests(points, order):
    conn = ClientConnection()
    requests = [conn.send(MetadataRequest(topics=None), 12) for _ in range(5)]
    stream = b"".join(answer(requests[i], meta(str(i))) for i in order)
    cuts = sorted({p % (len(stream) + 1) for p in points})
    events = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        events += conn.receive_data(stream[a:b])
    assert [e.request for e in events] == [requests[i] for i in order]
    assert all(e.message.topics[0].name == str(i) for e, i in zip(events, order))
    assert conn.in_flight == 0


def test_an_answer_to_no_request_and_a_second_answer_are_errors():
    conn = ClientConnection()
    req = conn.send(MetadataRequest(topics=None), 12)
    frame = answer(req, meta())
    (event,) = conn.receive_data(frame)
    assert isinstance(event, Response)
    with pytest.raises(UnknownCorrelationIdError, match="correlation id 0, answered already") as e:
        conn.receive_data(frame)
    assert e.value.correlation_id == 0
    with pytest.raises(UnknownCorrelationIdError, match="correlation id 77, which no request has"):
        conn.receive_data(struct.pack(">ii", 4, 77))


def test_a_correlation_id_in_flight_cannot_be_given_again():
    conn = ClientConnection()
    conn.send(MetadataRequest(topics=None), 12, correlation_id=5)
    with pytest.raises(DuplicateCorrelationIdError, match="correlation id 5 is in flight already"):
        conn.send(MetadataRequest(topics=None), 12, correlation_id=5)
    assert conn.in_flight == 1


def test_the_in_flight_limit_holds_and_acks_0_produce_is_never_in_flight():
    conn = ClientConnection(max_in_flight=2)
    a = conn.send(MetadataRequest(topics=None), 12)
    conn.send(MetadataRequest(topics=None), 12)
    assert not conn.can_send
    with pytest.raises(InFlightLimitError, match="2 requests in flight"):
        conn.send(MetadataRequest(topics=None), 12)
    fire = conn.send(ProduceRequest(acks=0, topic_data=[]), 9)  # no answer will come: not in flight
    assert not fire.expects_response and conn.in_flight == 2
    conn.receive_data(answer(a, meta()))
    assert conn.can_send and conn.send(ProduceRequest(acks=1, topic_data=[]), 9).expects_response


def test_an_abandoned_request_s_late_answer_is_dropped():
    conn = ClientConnection()
    late = conn.send(MetadataRequest(topics=None), 12)
    conn.abandon(late.correlation_id)
    assert conn.in_flight == 0
    ok = conn.send(MetadataRequest(topics=None), 12)
    events = conn.receive_data(answer(late, meta("late")) + answer(ok, meta("ok")))
    assert [e.message.topics[0].name for e in events] == ["ok"] and conn.dropped == 1


def test_a_body_that_does_not_decode_fails_its_request_alone():
    conn = ClientConnection()
    bad = conn.send(MetadataRequest(topics=None), 12)
    good = conn.send(MetadataRequest(topics=None), 12)
    truncated = struct.pack(">iib", 6, bad.correlation_id, 0) + b"\x00"
    events = conn.receive_data(truncated + answer(good, meta()))
    assert isinstance(events[0], ResponseFailed) and events[0].request is bad
    assert isinstance(events[0].error, kcodec.DecodeError)
    assert isinstance(events[1], Response) and events[1].request is good


def test_trailing_bytes_are_counted_or_refused():
    for strict in (False, True):
        conn = ClientConnection(strict=strict)
        req = conn.send(ProduceRequest(acks=1, topic_data=[]), 9)
        frame = answer(req, ProduceResponse())
        padded = struct.pack(">i", len(frame) - 4 + 3) + frame[4:] + b"\x00\x01\x02"
        (event,) = conn.receive_data(padded)
        if strict:
            assert isinstance(event, ResponseFailed) and "3 trailing bytes" in str(event.error)
        else:
            assert event.trailing_bytes == 3 and conn.trailing_bytes == 3


def test_a_request_sent_under_another_api_key_is_answered_as_its_class():
    conn = ClientConnection()
    req = conn.send(ListTopicsRequest(), 0, api_key=2001)
    assert joined(req)[4:6] == struct.pack(">h", 2001)
    (event,) = conn.receive_data(answer(req, ListTopicsResponse(topics=[ListTopicsResponse.Topic(name="x")])))
    assert isinstance(event.message, ListTopicsResponse) and event.api_key == 2001


def test_zero_copy_responses_view_the_bytes_received():
    conn = ClientConnection(zero_copy=True)
    from kcodec.messages import FetchRequest, FetchResponse
    req = conn.send(FetchRequest(), 12)
    part = FetchResponse.PartitionData(partition_index=0, records=b"batch")
    frame = answer(req, FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])]))
    (event,) = conn.receive_data(frame)
    records = event.message.responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is frame and bytes(records) == b"batch"


# -- ApiVersions ------------------------------------------------------------------------------------------

def test_negotiation_picks_the_highest_common_versions():
    conn = negotiated()
    assert conn.versions.api_version == 4 and conn.versions.pick(MetadataRequest) == 12
    assert conn.send(MetadataRequest(topics=None)).version == 12  # the negotiated version by default
    assert conn.versions.pick(ListTopicsRequest) is None
    with pytest.raises(UnsupportedApiError, match=r"ListTopics \(api key 1142\): broker speaks no version"):
        conn.send(ListTopicsRequest())
    capped = negotiated(max_versions={3: 5, 18: 2})
    assert capped.versions.pick(MetadataRequest) == 5 and capped.versions.api_version == 2


def test_unsupported_version_retries_at_the_brokers_highest():
    conn = ClientConnection()
    neg = conn.negotiation()
    first = neg.start()
    # Kafka's answer to an ApiVersions version it lacks: v0 layout, error 35, its own range for key 18.
    refusal = api_versions({18: (0, 2)}, error=35)
    again = neg.receive(conn.receive_data(answer(first, refusal, 0))[0])
    assert first.version == 4 and again.version == 2
    assert neg.receive(conn.receive_data(answer(again, api_versions(APIS)))[0]) is None
    assert conn.versions.api_version == 2 and conn.versions.broker[3] == (0, 12)


def test_a_refusal_without_a_range_falls_back_to_v0_then_uses_what_it_shows():
    conn = ClientConnection()
    neg = conn.negotiation()
    first = neg.start()
    v0 = neg.receive(conn.receive_data(answer(first, ApiVersionsResponse(error_code=35), 0))[0])
    assert v0.version == 0
    better = neg.receive(conn.receive_data(answer(v0, api_versions({**APIS, 18: (0, 2)}), 0))[0])
    assert better.version == 2
    assert neg.receive(conn.receive_data(answer(better, api_versions(APIS)))[0]) is None
    assert neg.tried == [4, 0, 2]


def test_negotiation_errors_are_clear():
    conn = ClientConnection()
    neg = conn.negotiation()
    first = neg.start()
    with pytest.raises(ResponseError, match="ApiVersions failed: CLUSTER_AUTHORIZATION_FAILED"):
        neg.receive(conn.receive_data(answer(first, ApiVersionsResponse(error_code=31)))[0])
    neg = conn.negotiation()
    first = neg.start()
    zero = neg.receive(conn.receive_data(answer(first, ApiVersionsResponse(error_code=35), 0))[0])
    with pytest.raises(ResponseError, match="ApiVersions v0 refused as UNSUPPORTED_VERSION"):
        neg.receive(conn.receive_data(answer(zero, ApiVersionsResponse(error_code=35), 0))[0])


def test_renegotiation_replaces_the_versions():
    conn = negotiated()
    neg = conn.negotiation()
    req = neg.start()
    neg.receive(conn.receive_data(answer(req, api_versions({**APIS, 3: (0, 9)}), 0))[0])
    assert conn.versions.pick(MetadataRequest) == 9
