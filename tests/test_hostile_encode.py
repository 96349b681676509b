"""Hostile input to the encoder, and unknown tagged fields: every failure is an EncodeError that says
where (field path, reason), never a crash. Fields a version lacks, None, out-of-range ints, wrong types;
unknown tagged fields (collisions, order, exact bytes). Decoding's hostile input: tests/test_hostile.py.
"""

from __future__ import annotations

import uuid
import warnings

import pytest
from test_hostile import Real, _cluster, i32, real  # noqa: F401 - real: the fixture

import kcodec
from kcodec import DecodeError, EncodeError, UnsupportedVersionError
from kcodec.core.backend import available
from kcodec.core.ir import program_for
from kcodec.messages import (ApiVersionsRequest, ApiVersionsResponse, CreateTopicsRequest, FetchRequest,
                             FindCoordinatorRequest, MetadataRequest, MetadataResponse, RequestHeader,
                             SaslAuthenticateRequest)


def test_encode_non_ignorable_field_absent_in_version() -> None:
    with pytest.raises(EncodeError) as ei:
        kcodec.encode(MetadataRequest(topics=[], allow_auto_topic_creation=False), 3)
    e = ei.value
    assert (e.path, e.message, e.version) == ("allow_auto_topic_creation", "MetadataRequest", 3)
    assert "allow_auto_topic_creation" in str(e) and "MetadataRequest v3" in str(e)
    assert "not ignorable" in e.reason
    with pytest.raises(EncodeError):
        kcodec.encoded_size(MetadataRequest(topics=[], allow_auto_topic_creation=False), 3)
    with pytest.raises(EncodeError) as ei:
        kcodec.encode_request(CreateTopicsRequest(topics=[], timeout_ms=1, validate_only=True), 0, 1, "c")
    assert (ei.value.path, ei.value.version) == ("validate_only", 0)
    # nested
    msg = _cluster([1])
    msg.topics[1].topic_authorized_operations = 5
    with pytest.raises(EncodeError) as ei:
        kcodec.encode(msg, 7)
    assert (ei.value.path, ei.value.version) == ("topics[1].topic_authorized_operations", 7)
    assert kcodec.encode(msg, 8)  # the field exists from v8
    # the default value of such a field is fine
    assert kcodec.encode(MetadataRequest(topics=[], allow_auto_topic_creation=True), 3) == i32(0)


def test_encode_drops_ignorable_fields_silently() -> None:
    plain = _cluster([1, 2])
    fancy = _cluster([1, 2])
    fancy.throttle_time_ms = 100
    fancy.cluster_id = "elsewhere"
    fancy.brokers[0].rack = "r1"
    fancy.topics[0].is_internal = True
    fancy.topics[1].topic_id = uuid.UUID(int=7)
    fancy.topics[1].partitions[0].leader_epoch = 5
    fancy.topics[1].partitions[1].offline_replicas = [2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kcodec.encode(fancy, 0) == kcodec.encode(plain, 0)
    assert kcodec.encode(fancy, 1) != kcodec.encode(plain, 1)  # rack and is_internal exist at v1


@pytest.mark.parametrize("cls,version,kwargs,path,reason", [
    (FindCoordinatorRequest, 0, {"key": None}, "key", "string is None but the field is not nullable"),
    (CreateTopicsRequest, 2, {"topics": [CreateTopicsRequest.CreatableTopic(name=None)]}, "topics[0].name",
     "string is None"),
    (MetadataRequest, 0, {"topics": None}, "topics", "array is None but the field is not nullable"),
    (SaslAuthenticateRequest, 2, {"auth_bytes": None}, "auth_bytes", "bytes is None"),
    (CreateTopicsRequest, 0, {"topics": [None]}, "topics[0]", "struct is None but the field is not nullable"),
    (MetadataRequest, 12, {"topics": [MetadataRequest.Topic(name="x", topic_id=None)]}, "topics[0].topic_id",
     "expected uuid.UUID, got NoneType"),
    (MetadataRequest, 4, {"topics": [], "allow_auto_topic_creation": None}, "allow_auto_topic_creation",
     "expected bool, got NoneType"),
])
def test_encode_none_in_non_nullable(cls: type, version: int, kwargs: dict, path: str, reason: str) -> None:
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(EncodeError) as ei:
            fn(cls(**kwargs), version)
        assert ei.value.path == path and ei.value.reason.startswith(reason), ei.value
        assert ei.value.version == version and ei.value.message == cls.__name__


def _av(**kw: int) -> ApiVersionsResponse:
    return ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(**kw)])


@pytest.mark.parametrize("msg,version,path,reason", [
    (FindCoordinatorRequest(key="g", key_type=128), 1, "key_type", "128 is out of range for int8"),
    (FindCoordinatorRequest(key="g", key_type=-129), 1, "key_type", "-129 is out of range for int8"),
    (_av(api_key=40000), 0, "api_keys[0].api_key", "40000 is out of range for int16"),
    (_av(max_version=-32769), 3, "api_keys[0].max_version", "-32769 is out of range for int16"),
    (ApiVersionsResponse(throttle_time_ms=2**31), 1, "throttle_time_ms", "2147483648 is out of range for int32"),
    (ApiVersionsResponse(finalized_features_epoch=2**63), 3, "finalized_features_epoch",
     "9223372036854775808 is out of range for int64"),
    (CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="t", assignments=[CreateTopicsRequest.CreatableReplicaAssignment(broker_ids=[1, -2**31 - 1])])]),
     0, "topics[0].assignments[0].broker_ids[1]", "-2147483649 is out of range for int32"),
])
def test_encode_out_of_range(msg: object, version: int, path: str, reason: str) -> None:
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(EncodeError) as ei:
            fn(msg, version)
        assert (ei.value.path, ei.value.reason) == (path, reason)


@pytest.mark.parametrize("value", [-1, 1 << 128, "x"])
def test_encode_uuid_whose_int_was_set_by_hand(value: object) -> None:
    """A UUID's int set past its constructor's checks is refused by encode and encoded_size (the compiled
    backend had written it masked to 128 bits, the reference raised a bare OverflowError)."""
    u = uuid.UUID(int=5)
    object.__setattr__(u, "int", value)
    msg = MetadataResponse(topics=[MetadataResponse.Topic(name="t", topic_id=u)])
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(EncodeError) as ei:
            fn(msg, 12)
        assert ei.value.path == "topics[0].topic_id"
        assert ei.value.reason == f"a UUID's int must be 0 to 2**128 - 1, got {value!r}"


def test_encode_uuid_bounds_and_subclass() -> None:
    class Sub(uuid.UUID):
        pass
    for u in (uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1), Sub(int=0x1234)):
        msg = MetadataResponse(topics=[MetadataResponse.Topic(name="t", topic_id=u)])
        assert kcodec.decode(MetadataResponse, kcodec.encode(msg, 12), 12).topics[0].topic_id == u


def test_encode_out_of_range_uint16() -> None:
    from kcodec.messages import AddRaftVoterRequest
    for port in (-1, 65536):
        msg = AddRaftVoterRequest(listeners=[AddRaftVoterRequest.Listener(name="l", host="h", port=port)])
        with pytest.raises(EncodeError) as ei:
            kcodec.encode(msg, 0)
        assert ei.value.path == "listeners[0].port" and "out of range for uint16" in ei.value.reason
    assert kcodec.encode(AddRaftVoterRequest(listeners=[AddRaftVoterRequest.Listener(name="l", host="h",
                                                                                     port=65535)]), 0)


@pytest.mark.parametrize("msg,version,path,reason", [
    (FindCoordinatorRequest(key=5), 0, "key", "expected str, got int"),
    (FindCoordinatorRequest(key=b"g"), 0, "key", "expected str, got bytes"),
    (FindCoordinatorRequest(key="\ud800"), 0, "key", "string is not encodable as UTF-8"),
    (FindCoordinatorRequest(key="x" * 32768), 0, "key", "string of 32768 UTF-8 bytes exceeds 32767"),
    (FindCoordinatorRequest(key="g", key_type="1"), 1, "key_type", "expected int, got str"),
    (FindCoordinatorRequest(key="g", key_type=1.0), 1, "key_type", "expected int, got float"),
    (FindCoordinatorRequest(coordinator_keys="abc"), 4, "coordinator_keys", "expected a list, got str"),
    (FindCoordinatorRequest(coordinator_keys=["a", 2]), 4, "coordinator_keys[1]", "expected str, got int"),
    (MetadataRequest(topics={"name": "x"}), 1, "topics", "expected a list, got dict"),
    (MetadataRequest(topics=[MetadataRequest.Topic(name="x", topic_id=str(uuid.UUID(int=1)))]), 10,
     "topics[0].topic_id", "expected uuid.UUID, got str"),
    (SaslAuthenticateRequest(auth_bytes="secret"), 0, "auth_bytes", "expected a bytes-like value, got str"),
    (MetadataRequest(topics=[], allow_auto_topic_creation="yes"), 4, "allow_auto_topic_creation",
     "expected bool, got str"),
])
def test_encode_wrong_types(msg: object, version: int, path: str, reason: str) -> None:
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(EncodeError) as ei:
            fn(msg, version)
        assert (ei.value.path, ei.value.reason[:len(reason)]) == (path, reason), ei.value


def test_encode_wrong_struct() -> None:
    msg = MetadataRequest(topics=[{"name": "x"}])
    with pytest.raises(EncodeError) as ei:
        kcodec.encode(msg, 1)
    assert ei.value.path == "topics[0]" and ei.value.reason == "expected a MetadataRequest.Topic, got dict"
    with pytest.raises(EncodeError) as ei:  # encoded_size words it differently, but fails the same way
        kcodec.encoded_size(msg, 1)
    assert ei.value.path.startswith("topics[0]")


def test_encode_wrong_message() -> None:
    with pytest.raises(EncodeError):
        kcodec.encode({"topics": []}, 1)  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match="is not a request"):
        kcodec.encode_request(MetadataResponse(), 1, 1, "c")
    with pytest.raises(EncodeError, match="is not a response"):
        kcodec.encode_response(MetadataRequest(), 1, 1)
    with pytest.raises(UnsupportedVersionError):
        kcodec.encode(MetadataRequest(), 99)


# ---------------------------------------------------------------------------- unknown tagged fields

def test_unknown_tag_colliding_with_known_tag() -> None:
    for tag, field in [(0, "supported_features"), (1, "finalized_features_epoch"), (3, "zk_migration_ready")]:
        msg = ApiVersionsResponse(unknown_tagged_fields={tag: b"\x01"})
        for fn in (kcodec.encode, kcodec.encoded_size):
            with pytest.raises(EncodeError) as ei:
                fn(msg, 3)
            assert f"unknown tagged field {tag} collides with the known tagged field {field}" in ei.value.reason
    # at a version where the tag is not known, the same bytes are fine
    msg = ApiVersionsRequest(client_software_name="a", client_software_version="1",
                             unknown_tagged_fields={0: b"\x01"})
    assert kcodec.decode(ApiVersionsRequest, kcodec.encode(msg, 3), 3) == msg


def test_tag_of_another_version_is_refused() -> None:
    """A tag that the struct's fields hold in other versions only is not an unknown tagged field: Kafka's
    generated readers throw ("Tag 1 is not valid for version 12"; tests/oracle found it), so kcodec refuses it
    both ways, on both backends."""
    reason = "tagged field 1 is replica_state in other versions, not valid in this one"
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(EncodeError) as ei:
            fn(FetchRequest(unknown_tagged_fields={1: b"\x01"}), 12)
        assert ei.value.reason == reason
    fine = kcodec.encode(FetchRequest(unknown_tagged_fields={5: b"\x01"}), 12)
    assert fine.endswith(b"\x01\x05\x01\x01")  # one tagged field: tag 5, 1 byte
    bad = fine[:-3] + b"\x01\x01\x01"
    for backend in available().values():
        with pytest.raises(DecodeError) as de:
            backend.decode(program_for(FetchRequest, 12), bad, 0, None, False)
        assert (de.value.reason, de.value.offset) == (reason, len(bad) - 3)


@pytest.mark.parametrize("tag", [-1, "1", None, 1.0, 2**32, 2**35])
def test_unknown_tag_not_a_tag_number(tag: object) -> None:
    msg = MetadataRequest(topics=None, unknown_tagged_fields={tag: b""})
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(EncodeError, match="is not a tag number"):
            fn(msg, 12)


def test_largest_tag_round_trips() -> None:
    msg = MetadataRequest(topics=None, unknown_tagged_fields={2**32 - 1: b"z"})
    data = kcodec.encode(msg, 12)
    assert data == b"\x00\x01\x00" + b"\x01" + b"\xff\xff\xff\xff\x0f" + b"\x01z"
    assert kcodec.encoded_size(msg, 12) == len(data)
    assert kcodec.decode(MetadataRequest, data, 12) == msg


def test_unknown_tagged_fields_ascending_exact_bytes() -> None:
    msg = MetadataRequest(topics=None, unknown_tagged_fields={300: b"\x01\x02", 7: b"\xaa", 2: b""})
    expected = bytes.fromhex("00 01 00" "03" "02 00" "07 01 aa" "ac02 02 0102")
    assert kcodec.encode(msg, 12) == expected
    assert kcodec.encoded_size(msg, 12) == len(expected)
    back = kcodec.decode(MetadataRequest, expected, 12)
    assert back == msg and back.unknown_tagged_fields == {2: b"", 7: b"\xaa", 300: b"\x01\x02"}
    # written out of order by a peer: decoded all the same, re-written in ascending order
    shuffled = bytes.fromhex("00 01 00" "03" "ac02 02 0102" "02 00" "07 01 aa")
    back = kcodec.decode(MetadataRequest, shuffled, 12)
    assert back == msg and kcodec.encode(back, 12) == expected


def test_unknown_and_known_tagged_fields_interleave() -> None:
    msg = ApiVersionsResponse(finalized_features_epoch=7, zk_migration_ready=True,
                              unknown_tagged_fields={10: b"", 4: b"\x09"})
    expected = bytes.fromhex("0000" "01" "00000000" "04" "01 08 0000000000000007" "03 01 01" "04 01 09" "0a 00")
    assert kcodec.encode(msg, 3) == expected
    back = kcodec.decode(ApiVersionsResponse, expected, 3)
    assert back == msg and back.unknown_tagged_fields == {4: b"\x09", 10: b""}
    # nested structs and headers keep theirs too
    req = MetadataRequest(topics=[MetadataRequest.Topic(name="t", unknown_tagged_fields={9: b"n", 1: b"m"})])
    data = kcodec.encode(req, 12)
    assert bytes.fromhex("02 01 01 6d 09 01 6e") in data
    assert kcodec.decode(MetadataRequest, data, 12) == req
    header = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=1, client_id="c",
                           unknown_tagged_fields={5: b"h"})
    assert kcodec.decode(RequestHeader, kcodec.encode(header, 2), 2) == header


def test_unknown_tags_in_real_frames_round_trip(real: dict[str, Real]) -> None:
    """Append unknown tagged fields to the root of each flexible real request: they decode, and the
    frame re-encodes with them in ascending order."""
    n = 0
    for r in real.values():
        if r.response or not program_for(r.cls, r.version).flexible or r.consumed != len(r.body):
            continue
        if r.body[-1] != 0:  # a root tag section that is not empty: leave it
            continue
        tags = b"\x02" + b"\x21\x02hi" + b"\x05\x00"  # 33 then 5: out of order
        frame = r.frame[:-1] + tags
        frame = (len(frame) - 4).to_bytes(4, "big") + frame[4:]
        header, req = kcodec.decode_request(frame)
        assert req.unknown_tagged_fields == {33: b"hi", 5: b""}
        again = kcodec.encode_request(req, header.api_version, header.correlation_id, header.client_id)
        assert again == frame[:-len(tags)] + b"\x02\x05\x00\x21\x02hi"
        n += 1
    assert n >= 8
