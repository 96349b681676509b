"""The public API: the surface the README shows (its examples run in tests/test_docs.py), Kafka's field semantics, headers and frames."""

from __future__ import annotations

import json
import mmap
import subprocess
import sys
import uuid

import pytest
from needs import need_module

import kcodec
from kcodec import definitions
from kcodec.errors import ErrorCode, is_retriable, name_of
from kcodec.messages import (ApiVersionsRequest, ApiVersionsResponse, ControlledShutdownRequest,
                             CreateTopicsRequest, DescribeTopicPartitionsRequest, FetchRequest,
                             MetadataRequest, MetadataResponse)


def _metadata() -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponse.Broker(node_id=1, host="b1", port=9092, rack="r1")],
        cluster_id="c", controller_id=1,
        topics=[MetadataResponse.Topic(name="t", topic_id=uuid.UUID(int=7), partitions=[
            MetadataResponse.Partition(partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1])])])


def test_the_readme_example():
    msg = _metadata()
    data = kcodec.encode(msg, version=12)
    again = kcodec.decode(MetadataResponse, data, version=12)
    assert again == msg and kcodec.encoded_size(msg, version=12) == len(data)
    assert kcodec.message_class(api_key=3, kind="response") is MetadataResponse
    req = MetadataRequest(topics=[MetadataRequest.Topic(name="t")])
    frame = kcodec.encode_request(req, version=12, correlation_id=7, client_id="me")
    header, req2 = kcodec.decode_request(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 12, 7, "me")
    assert req2 == req
    frame = kcodec.encode_response(msg, version=12, correlation_id=7)
    header, msg2 = kcodec.decode_response(frame, api_key=3, api_version=12)
    assert header.correlation_id == 7 and msg2 == msg
    d = kcodec.to_dict(msg)
    assert kcodec.from_dict(MetadataResponse, json.loads(json.dumps(d))) == msg


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, "mmap", "numpy", "offset-view", "strided",
                                  "strided-numpy"])
def test_any_buffer_decodes(wrap, tmp_path):
    msg = _metadata()
    data = kcodec.encode(msg, 12)
    if wrap == "mmap":
        p = tmp_path / "m.bin"
        p.write_bytes(data)
        with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            assert kcodec.decode(MetadataResponse, m, 12) == msg
        return
    if wrap == "numpy":
        np = need_module("numpy")
        buf = np.frombuffer(data, dtype=np.uint8)
    elif wrap == "offset-view":
        buf = memoryview(b"xyz" + data)[3:]
    elif wrap == "strided":  # non-contiguous: copied first, by both backends (the compiled one said BufferError)
        buf = _strided(data)
    elif wrap == "strided-numpy":
        np = need_module("numpy")
        buf = np.frombuffer(_strided(data).obj, np.uint8)[::2]
        assert not buf.flags.c_contiguous
    else:
        buf = wrap(data)
    assert kcodec.decode(MetadataResponse, buf, 12) == msg


def _strided(data: bytes) -> memoryview:
    """data's bytes as a non-contiguous view: every other byte of a buffer twice its length."""
    view = memoryview(bytes(b for c in data for b in (c, 0xEE)))[::2]
    assert not view.c_contiguous and view.tobytes() == data
    return view


def test_non_contiguous_buffers_decode_in_every_decoder():
    """decode_from, the frame decoders and both splitters copy a non-contiguous buffer first, as decode does;
    zero_copy's slices are then of the copy."""
    msg = _metadata()
    body = kcodec.encode(msg, 12)
    assert kcodec.decode_from(MetadataResponse, _strided(b"xx" + body), 12, offset=2) == (msg, 2 + len(body))
    req = FetchRequest(topics=[FetchRequest.FetchTopic(topic="t")])
    frame = kcodec.encode_request(req, 12, correlation_id=3, client_id="me")
    assert kcodec.decode_request(_strided(frame))[1] == req
    assert kcodec.decode_request_header(_strided(frame))[0].correlation_id == 3
    response = kcodec.encode_response(msg, 12, correlation_id=4)
    assert kcodec.decode_response(_strided(response), 3, 12, zero_copy=True)[1] == msg
    assert kcodec.FrameSplitter().feed(_strided(frame + response)) == [frame, response]
    from kcodec.protocol import FrameReader
    assert [bytes(f) for f in FrameReader().feed(_strided(frame))] == [frame]


def test_an_offset_outside_the_buffer_is_a_value_error_however_large():
    out = bytearray(64)
    for offset in (-1, 65, 2**63, 2**70, -2**70):  # (past Py_ssize_t the compiled backend said OverflowError)
        with pytest.raises(ValueError, match="lies outside the buffer's 64 bytes"):
            kcodec.encode_into(_metadata(), 12, out, offset)
    with pytest.raises(TypeError):
        kcodec.encode_into(_metadata(), 12, out, 1.0)
    with pytest.raises(TypeError):
        kcodec.decode_from(MetadataResponse, bytes(out), 12, end=1.0)  # (the pure backend said DecodeError)
    assert out == bytearray(64)
    body = kcodec.encode(_metadata(), 12)
    for threshold in (-2**70, -1, 0):  # (a negative threshold is 0's: the compiled backend said OverflowError)
        assert b"".join(map(bytes, kcodec.encode_buffers(_metadata(), 12, threshold=threshold))) == body


def test_version_ranges_are_enforced():
    with pytest.raises(kcodec.UnsupportedVersionError, match="no version 14"):
        kcodec.encode(_metadata(), 14)
    with pytest.raises(kcodec.UnsupportedVersionError):
        kcodec.decode(MetadataResponse, b"", -1)
    with pytest.raises(kcodec.UnsupportedVersionError):
        kcodec.message_class(api_key=9999, kind="request")


def test_message_class_answers_the_same_when_asked_again():
    """Classes found by api key are kept; asking again, by name, or with a bad kind answers as the first time."""
    first = [kcodec.message_class(3, kind) for kind in ("request", "response")]
    assert first == [MetadataRequest, MetadataResponse]
    assert [kcodec.message_class(3, kind) for kind in ("request", "response")] == first
    assert kcodec.message_class(3, name="MetadataResponse") is MetadataResponse  # the name wins, and is not kept
    assert kcodec.message_class(3) is MetadataRequest and kcodec.message_class(3.0) is MetadataRequest
    with pytest.raises(ValueError, match="kind is 'request' or 'response'"):
        kcodec.message_class(3, "reply")
    for _ in range(2):
        with pytest.raises(kcodec.UnsupportedVersionError, match="no response with api key 9999"):
            kcodec.message_class(9999, "response")


def test_fields_a_version_lacks_decode_to_defaults():
    msg = _metadata()
    old = kcodec.decode(MetadataResponse, kcodec.encode(msg, 0), 0)
    assert old.cluster_id is None and old.controller_id == -1          # default "null", default "-1"
    assert old.topics[0].topic_id == uuid.UUID(int=0)
    assert old.topics[0].partitions[0].leader_epoch == -1
    assert old.topics[0].topic_authorized_operations == -(1 << 31)      # default "-2147483648"
    assert FetchRequest().max_bytes == 0x7FFFFFFF                        # default "0x7fffffff"
    assert old.brokers[0].rack is None


def test_ignorable_fields_are_dropped_and_others_refused():
    msg = _metadata()
    assert kcodec.encode(msg, 0)  # cluster_id, rack, topic_id... are ignorable: dropped
    req = CreateTopicsRequest(validate_only=True)
    with pytest.raises(kcodec.EncodeError) as e:
        kcodec.encode(req, 0)  # validate_only (v1+) is not ignorable: losing it would change the request
    assert e.value.path == "validate_only" and e.value.version == 0
    assert kcodec.encode(CreateTopicsRequest(validate_only=False), 0)


def test_tagged_fields_are_written_only_when_not_default():
    # ApiVersionsResponse v3: tagged SupportedFeatures (0), FinalizedFeaturesEpoch (1), FinalizedFeatures (2)
    plain = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=3, min_version=0, max_version=12)])
    data = kcodec.encode(plain, 3)
    assert data[-1] == 0  # no tagged fields
    plain.finalized_features_epoch = 5
    data2 = kcodec.encode(plain, 3)
    assert data2 == data[:-1] + bytes.fromhex("01 01 08 0000000000000005")  # count, tag 1, size 8, int64
    again = kcodec.decode(ApiVersionsResponse, data2, 3)
    assert again.finalized_features_epoch == 5 and again == plain


def test_nullable_struct_field():
    req = DescribeTopicPartitionsRequest(topics=[DescribeTopicPartitionsRequest.TopicRequest(name="a")])
    assert req.cursor is None
    data = kcodec.encode(req, 0)
    assert kcodec.decode(DescribeTopicPartitionsRequest, data, 0) == req
    req.cursor = DescribeTopicPartitionsRequest.Cursor(topic_name="a", partition_index=3)
    data2 = kcodec.encode(req, 0)
    # the null marker 0xff becomes 0x01 + compact "a" + int32 3 + no tags
    assert data2 == data[:-2] + bytes.fromhex("01 0261 00000003 00") + data[-1:]
    assert kcodec.decode(DescribeTopicPartitionsRequest, data2, 0) == req


def test_header_versions_follow_kafka():
    assert kcodec.request_header_version(3, 8) == 1 and kcodec.request_header_version(3, 9) == 2
    assert kcodec.response_header_version(3, 8) == 0 and kcodec.response_header_version(3, 9) == 1
    assert kcodec.response_header_version(18, 3) == 0  # ApiVersions responses: always v0
    assert kcodec.request_header_version(18, 3) == 2
    assert kcodec.request_header_version(7, 0) == 0    # ControlledShutdown v0: no client id
    frame = kcodec.encode_request(ControlledShutdownRequest(broker_id=1), 0, correlation_id=9, client_id="x")
    assert frame == b"\x00\x00\x00\x0c" + bytes.fromhex("0007 0000 00000009 00000001")
    header, req = kcodec.decode_request(frame)
    assert header.correlation_id == 9 and req.broker_id == 1
    # an ApiVersions v3 response frame has no tagged-field byte in its header
    frame = kcodec.encode_response(ApiVersionsResponse(), 3, correlation_id=1)
    assert frame[4:8] == b"\x00\x00\x00\x01" and frame[8:10] == b"\x00\x00"


@pytest.mark.parametrize("api_key", sorted(definitions.api_keys()))
def test_every_api_frames_at_both_ends_of_its_range(api_key):
    req_cls = kcodec.message_class(api_key, "request")
    resp_cls = kcodec.message_class(api_key, "response")
    for version in sorted(set(req_cls.VALID_VERSIONS)):
        frame = kcodec.encode_request(req_cls(), version, correlation_id=42, client_id="c")
        header, req = kcodec.decode_request(frame)
        assert (header.api_key, header.api_version, header.correlation_id) == (api_key, version, 42)
        assert req == req_cls()
        frame = kcodec.encode_response(resp_cls(), version, correlation_id=43)
        header, resp = kcodec.decode_response(frame, api_key, version)
        assert header.correlation_id == 43 and resp == resp_cls()


def test_frame_splitter_cuts_chunked_streams():
    frames = [kcodec.encode_request(MetadataRequest(), v, correlation_id=v) for v in range(1, 13)]
    stream = b"".join(frames)
    for step in (1, 3, 7, len(stream)):
        sp = kcodec.FrameSplitter(max_frame_size=1024)
        got = []
        for i in range(0, len(stream), step):
            got += sp.feed(stream[i:i + step])
        assert got == frames and sp.pending == 0
    sp = kcodec.FrameSplitter(max_frame_size=16)
    with pytest.raises(kcodec.DecodeError, match="outside 0..16"):
        sp.feed(b"\x00\x00\x00\x11")


def test_strict_and_lenient_trailing_bytes():
    data = kcodec.encode(_metadata(), 12) + b"\x00"
    with pytest.raises(kcodec.DecodeError, match="1 trailing bytes") as e:
        kcodec.decode(MetadataResponse, data, 12)
    assert e.value.offset == len(data) - 1
    with pytest.warns(kcodec.TrailingBytesWarning):
        assert kcodec.decode(MetadataResponse, data, 12, strict=False) == _metadata()
    msg, end = kcodec.decode_from(MetadataResponse, data, 12)
    assert end == len(data) - 1 and msg == _metadata()


def test_equality_and_repr():
    a, b = _metadata(), _metadata()
    assert a == b and a != MetadataResponse()
    b.topics[0].partitions[0].isr_nodes.append(2)
    assert a != b
    assert repr(MetadataResponse.Broker(node_id=1, host="h", port=1)) == \
        "MetadataResponse.Broker(node_id=1, host='h', port=1, rack=None)"
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(TypeError):
        MetadataResponse(no_such_field=1)


def test_unknown_tags_compare_none_and_empty_alike():
    a, b = _metadata(), _metadata()
    a.unknown_tagged_fields = {}
    assert a == b


def test_to_dict_is_json_and_typed():
    req = ApiVersionsRequest(client_software_name="kc", client_software_version="1")
    d = kcodec.to_dict(req)
    assert d == {"client_software_name": "kc", "client_software_version": "1"}
    with pytest.raises(kcodec.EncodeError, match="no field"):
        kcodec.from_dict(ApiVersionsRequest, {"nope": 1})


def test_error_code_table():
    assert ErrorCode.TOPIC_ALREADY_EXISTS == 36
    assert ErrorCode(38).name == "INVALID_REPLICATION_FACTOR"
    assert is_retriable(3) and not is_retriable(36)
    assert name_of(12345) == "UNKNOWN(12345)"
    assert len(ErrorCode) == len(definitions.error_codes()) > 100


def test_import_is_light():
    code = ("import sys, kcodec; "
            "assert not [m for m in sys.modules if m.startswith('kcodec.messages.')], 'messages imported'; "
            "from kcodec import definitions; assert definitions._data.cache_info().currsize == 0; "
            "import kcodec.core.ir as ir; assert not ir._cache")
    subprocess.run([sys.executable, "-c", code], check=True)


def expected_engine(extension: str) -> str:
    """What should run, from facts outside kcodec's own choice: KCODEC_PURE, and whether the compiled
    module's file is installed (found by the import system without importing it)."""
    import importlib.util
    import os

    built = importlib.util.find_spec(f"kcodec.{extension}") is not None
    if os.environ.get("KCODEC_REQUIRE_EXTENSION", "") not in ("", "0"):
        assert built, f"kcodec.{extension} is required (KCODEC_REQUIRE_EXTENSION) but not built"
    return "python" if os.environ.get("KCODEC_PURE", "") not in ("", "0") or not built else "cython"


def test_backend_is_the_expected_one():
    import os

    expected = expected_engine("core._fast")
    assert kcodec.BACKEND == expected
    assert os.environ.get("KCODEC_EXPECT_BACKEND", expected) == expected  # what .ci/run asserts agrees


def test_frame_splitter_returns_good_frames_before_a_bad_prefix():
    good = kcodec.encode_request(MetadataRequest(), 12, correlation_id=1)
    sp = kcodec.FrameSplitter(max_frame_size=1024)
    assert sp.feed(good + good + b"\xff\xff\xff\xff") == [good, good]
    with pytest.raises(kcodec.DecodeError) as e:
        sp.feed(b"")
    assert e.value.offset == 2 * len(good)


def test_encoded_size_and_encode_agree_on_errors():
    bad = MetadataRequest(topics=[{"name": "t"}])
    for fn in (kcodec.encode, kcodec.encoded_size):
        with pytest.raises(kcodec.EncodeError, match="expected a MetadataRequest.Topic, got dict") as e:
            fn(bad, 12)
        assert e.value.path == "topics[0]"


def test_api_versions_v0_fallback():
    # kafka-python opens with ApiVersions v4; a broker without v4 answers in the v0 layout.
    v0 = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION,
                             api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=3)])
    frame = kcodec.encode_response(v0, 0, correlation_id=5)
    header, msg = kcodec.decode_response(frame, api_key=18, api_version=4)
    assert header.correlation_id == 5 and msg == v0
    # other APIs get no such fallback
    frame = kcodec.encode_response(MetadataResponse(), 0, correlation_id=1)
    with pytest.raises(kcodec.DecodeError):
        kcodec.decode_response(frame, api_key=3, api_version=12)


def test_readme_starts_with_the_two_commands():
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").splitlines()
    first_block = lines[lines.index("```sh") + 1: lines.index("```")]
    assert [line.split("#")[0].strip() for line in first_block] == ["make run", "make test"]


def test_unknown_api_keys():
    with pytest.raises(kcodec.UnsupportedVersionError):
        kcodec.request_header_version(31999, 0)
    frame = b"\x00\x00\x00\x0a" + bytes.fromhex("7cff 0000 00000001 ffff")  # api key 31999, null client id
    header, body_at, end = kcodec.decode_request_header(frame)
    assert (header.api_key, header.correlation_id, header.client_id, body_at, end) == (31999, 1, None, 14, 14)
    with pytest.raises(kcodec.UnsupportedVersionError):
        kcodec.decode_request(frame)


def test_decode_from_bounds():
    data = kcodec.encode(_metadata(), 12)
    msg, end = kcodec.decode_from(MetadataResponse, b"xx" + data + b"yy", 12, offset=2, end=2 + len(data))
    assert msg == _metadata() and end == 2 + len(data)
    with pytest.raises(kcodec.DecodeError):
        kcodec.decode_from(MetadataResponse, data, 12, end=len(data) - 1)
    for offset, end in ((-1, None), (0, len(data) + 1), (5, 4)):
        with pytest.raises(ValueError, match="do not lie within"):
            kcodec.decode_from(MetadataResponse, data, 12, offset=offset, end=end)
