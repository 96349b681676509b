"""Hostile and broken input: every failure is a DecodeError / EncodeError that says where, never a crash.

Decoding: every truncation of every real frame (as a body and as a frame), lengths of 2**31-1 in tiny
buffers (no large allocation), invalid UTF-8, over-long varints, negative and null lengths, nested field
paths, and a few thousand random mutations of real frames. Framing: FrameSplitter fed byte by byte,
oversized and negative size prefixes. Encoding's hostile input and unknown tagged fields:
tests/test_hostile_encode.py.
"""

from __future__ import annotations

import json
import os
import random
import re
import tracemalloc
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

import kcodec
from kcodec import DecodeError, FrameSplitter, TrailingBytesWarning, UnsupportedVersionError
from kcodec.core.ir import default_of, program_for
from kcodec.messages import (ApiVersionsRequest, ApiVersionsResponse, DeleteTopicsRequest, FindCoordinatorRequest,
                             MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
                             SaslAuthenticateRequest)

REAL = "vectors/real-frames"
# Only to list the files for parametrization (same rule as conftest's SHARED); bytes come via ``shared``.
_GUESS = Path(os.environ.get("KCODEC_SHARED", Path(__file__).resolve().parents[1].parent / "shared")) / REAL
NAMES = sorted(p.name for p in _GUESS.glob("*.bin")) if _GUESS.is_dir() else []

Partition = MetadataResponse.Partition
Topic = MetadataResponse.Topic
Broker = MetadataResponse.Broker


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


@dataclass
class Real:
    """One real frame, with what decoding it needs."""
    name: str
    frame: bytes
    response: bool
    api_key: int
    version: int
    cls: type
    header_cls: type
    header_version: int
    body_at: int     # where the body starts in the frame
    consumed: int    # bytes of the body the schema reads (less than the body for the quirky frames)
    tag_start: int   # where the body's root tag section starts (== consumed when not flexible)

    @property
    def body(self) -> bytes:
        return self.frame[self.body_at:]

    def decode_frame(self, frame: bytes, strict: bool = True) -> tuple:
        if self.response:
            return kcodec.decode_response(frame, self.api_key, self.version, strict=strict)
        return kcodec.decode_request(frame, strict=strict)


def _root_tag_start(cls: type, version: int, msg: object) -> int:
    """Where the root's tag section starts in the canonical encoding: everything before it re-encodes
    as the real peers wrote it (test_real_frames checks that), the section itself is then one 0x00."""
    prog = program_for(cls, version)
    if not prog.flexible:
        return len(kcodec.encode(msg, version))
    for op in prog.root.tagged:
        setattr(msg, op.attr, default_of(op))
    msg.unknown_tagged_fields = None  # type: ignore[attr-defined]
    return len(kcodec.encode(msg, version)) - 1


def _load(shared: Path, name: str) -> Real:
    frame = (shared / REAL / name).read_bytes()
    response = name.endswith("_response.bin")
    if response:
        entry = json.loads((shared / REAL / "index.json").read_text())[name]
        key, version = entry["api_key"], entry["api_version"]
        hv = kcodec.response_header_version(key, version)
        _, body_at = kcodec.decode_from(ResponseHeader, frame, hv, 4)
        header_cls = ResponseHeader
    else:
        header, body_at, _ = kcodec.decode_request_header(frame)
        key, version = header.api_key, header.api_version
        hv = kcodec.request_header_version(key, version)
        header_cls = RequestHeader
    cls = kcodec.message_class(key, "response" if response else "request")
    msg, end = kcodec.decode_from(cls, frame, version, body_at)
    consumed = end - body_at
    return Real(name, frame, response, key, version, cls, header_cls, hv, body_at, consumed,
                _root_tag_start(cls, version, msg))


@pytest.fixture(scope="module")
def real(shared: Path) -> dict[str, Real]:
    return {name: _load(shared, name) for name in sorted(p.name for p in (shared / REAL).glob("*.bin"))}


def test_all_real_frames_listed(real: dict[str, Real]) -> None:
    assert sorted(real) == NAMES and len(NAMES) >= 37


def _check(e: DecodeError, length: int) -> None:
    """What every DecodeError promises: an offset inside the input, and text that says it."""
    assert isinstance(e.offset, int) and 0 <= e.offset <= length, (e, length)
    assert e.reason and str(e)
    assert f"at byte {e.offset}" in str(e)
    if e.path:
        assert f"field {e.path}" in str(e)


# --------------------------------------------------------------------------------------- truncation

@pytest.mark.parametrize("name", NAMES)
def test_truncated_body(real: dict[str, Real], name: str) -> None:
    """Every prefix of the body, decoded as a body of its message, is a DecodeError (but the prefix
    that is exactly what the schema reads, for the frames with trailing bytes). Before the root's tag
    section, the error names the field; inside it, a known tagged field is named too."""
    r = real[name]
    body = r.body
    known_tags = {op.tag: op.attr for op in program_for(r.cls, r.version).root.tagged}
    assert r.tag_start <= r.consumed <= len(body)
    for n in range(len(body)):
        prefix = body[:n]
        if n == r.consumed:
            kcodec.decode(r.cls, prefix, r.version)  # the quirky frames minus their trailing bytes
            continue
        with pytest.raises(DecodeError) as ei:
            kcodec.decode(r.cls, prefix, r.version)
        e = ei.value
        _check(e, n)
        assert (e.message, e.version) == (r.cls.__name__, r.version)
        if n < r.tag_start:
            assert e.path, (n, e)
        elif n > r.consumed:
            assert e.reason.startswith(f"{n - r.consumed} trailing bytes") and e.offset == r.consumed
        else:
            m = re.search(r"tagged field (\d+)", e.reason)
            if m and int(m.group(1)) in known_tags:
                assert e.path == known_tags[int(m.group(1))], (n, e)


@pytest.mark.parametrize("name", NAMES)
def test_truncated_frame(real: dict[str, Real], name: str) -> None:
    """Every prefix of the frame as it is (its size prefix then claims more than is there), and every
    truncation with the size prefix rewritten to match (what a hostile peer can send)."""
    r = real[name]
    frame = r.frame
    for n in range(len(frame)):
        with pytest.raises(DecodeError) as ei:
            r.decode_frame(frame[:n])
        _check(ei.value, n)
        assert ei.value.offset == 0  # the size prefix is what is wrong

    header_tags = 1 if r.header_version >= (2 if not r.response else 1) else 0
    for n in range(4, len(frame)):
        cut = (n - 4).to_bytes(4, "big") + frame[4:n]
        if n == r.body_at + r.consumed:
            r.decode_frame(cut)
            continue
        with pytest.raises(DecodeError) as ei:
            r.decode_frame(cut)
        e = ei.value
        _check(e, n)
        if n < r.body_at:  # inside the header
            if e.message is None:
                assert not r.response and n < 8 and e.offset == 4  # too short for key and version
            else:
                assert e.message == r.header_cls.__name__
                if n < r.body_at - header_tags:
                    assert e.path, (n, e)
        else:
            assert e.message == r.cls.__name__ and e.offset >= r.body_at
            if n < r.body_at + r.tag_start:
                assert e.path, (n, e)


# ------------------------------------------------------------------------------------- huge lengths

HUGE = 2**31 - 1
PAD = bytes(16)

LENGTH_CASES = [
    # (id, class, version, input, path, reason prefix): 20 bytes, but where the array is nested

    ("classic-struct-array", MetadataRequest, 1, i32(HUGE) + PAD, "topics", "array of 2147483647"),
    ("compact-struct-array", MetadataRequest, 12, uvarint(HUGE + 1) + bytes(15), "topics",
     "array of 2147483647"),
    ("classic-string-array", DeleteTopicsRequest, 0, i32(HUGE) + PAD, "topic_names", "array of 2147483647"),
    ("compact-string-array", FindCoordinatorRequest, 4, b"\x00" + uvarint(HUGE + 1) + bytes(14),
     "coordinator_keys", "array of 2147483647"),
    ("classic-int-array", MetadataResponse, 1,
     i32(0) + i32(0) + i32(1) + i16(0) + i16(0) + b"\x00" + i32(1) + i16(0) + i32(0) + i32(0) + i32(HUGE)
     + bytes(4), "topics[0].partitions[0].replica_nodes", "array of 2147483647"),
    ("compact-int-array", MetadataResponse, 12,
     i32(0) + b"\x01" + b"\x00" + i32(0) + b"\x02" + i16(0) + b"\x00" + bytes(16) + b"\x00" + b"\x02"
     + i16(0) + i32(0) + i32(0) + i32(0) + uvarint(HUGE + 1) + bytes(4),
     "topics[0].partitions[0].replica_nodes", "array of 2147483647"),
    # classic strings have an int16 length: 32767 is the most they can claim
    ("classic-string", FindCoordinatorRequest, 0, i16(0x7FFF) + bytes(18), "key", "expected a string of 32767"),
    ("compact-string", FindCoordinatorRequest, 3, uvarint(HUGE + 1) + bytes(15), "key",
     "string length 2147483647"),
    ("classic-bytes", SaslAuthenticateRequest, 0, i32(HUGE) + PAD, "auth_bytes", "expected bytes of 2147483647"),
    ("compact-bytes", SaslAuthenticateRequest, 2, uvarint(HUGE + 1) + bytes(15), "auth_bytes",
     "expected bytes of 2147483647"),
    ("compact-bytes-32-bit", SaslAuthenticateRequest, 2, b"\xff\xff\xff\xff\x0f" + bytes(15), "auth_bytes",
     "expected bytes of 4294967294"),
    ("compact-bytes-33-bit", SaslAuthenticateRequest, 2, b"\xff\xff\xff\xff\x1f" + bytes(15), "auth_bytes",
     "unsigned varint exceeds 32 bits"),
    ("tagged-field-count", MetadataRequest, 12, b"\x00\x00\x00" + uvarint(HUGE) + bytes(12), "",
     "2147483647 tagged fields"),
    ("tagged-field-size", MetadataRequest, 12, b"\x00\x00\x00\x01\x07" + uvarint(HUGE) + bytes(10), "",
     "expected tagged field 7 of 2147483647"),
]


@pytest.mark.parametrize("cls,version,data,path,reason", [c[1:] for c in LENGTH_CASES],
                         ids=[c[0] for c in LENGTH_CASES])
def test_huge_length_fails_at_once(cls: type, version: int, data: bytes, path: str, reason: str) -> None:
    kcodec.decode(cls, kcodec.encode(cls(), version), version)  # compile before measuring
    assert len(data) <= 64
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as ei:
            kcodec.decode(cls, data, version)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak
    e = ei.value
    _check(e, len(data))
    assert e.path == path and e.reason.startswith(reason), e


def test_huge_frame_size_prefix() -> None:
    for prefix in (i32(HUGE), i32(-1), i32(-(2**31))):
        frame = prefix + i16(3) + i16(1) + i32(7) + i16(-1) + i32(-1)
        for decode in (kcodec.decode_request, lambda f: kcodec.decode_response(f, 3, 1)):
            with pytest.raises(DecodeError) as ei:
                decode(frame)
            assert ei.value.offset == 0


# ---------------------------------------------------------------------------- bad strings, varints

@pytest.mark.parametrize("raw,bad_at", [
    (b"ab\xffcd", 2),            # never valid in UTF-8
    (b"a\x80", 1),               # a continuation byte with no lead
    (b"\xc0\xaf", 0),            # overlong "/"
    (b"x\xed\xa0\x80", 1),       # an encoded surrogate
    (b"abc\xe2\x82", 3),         # cut in the middle of a character
])
def test_invalid_utf8(raw: bytes, bad_at: int) -> None:
    for version, data, start in [(0, i16(len(raw)) + raw, 2), (3, uvarint(len(raw) + 1) + raw + b"\x00\x00", 1)]:
        with pytest.raises(DecodeError) as ei:
            kcodec.decode(FindCoordinatorRequest, data, version)
        e = ei.value
        assert e.reason.startswith("invalid UTF-8") and e.path == "key"
        assert e.offset == start + bad_at


def test_invalid_utf8_in_real_frames(real: dict[str, Real]) -> None:
    r = real["kafkapython_ApiVersions_v3.bin"]
    at = r.frame.index(b"kafka-python", r.body_at)  # client_software_name
    bad = bytearray(r.frame)
    bad[at + 5] = 0xFF
    with pytest.raises(DecodeError) as ei:
        kcodec.decode_request(bytes(bad))
    assert (ei.value.offset, ei.value.path, ei.value.message) == (at + 5, "client_software_name",
                                                                  "ApiVersionsRequest")
    at = r.frame.index(b"kp-admin")  # the header's client id
    assert at < r.body_at
    bad = bytearray(r.frame)
    bad[at] = 0xC3  # a lead byte followed by ASCII
    with pytest.raises(DecodeError) as ei:
        kcodec.decode_request(bytes(bad))
    assert (ei.value.offset, ei.value.path, ei.value.message) == (at, "client_id", "RequestHeader")


def test_varint_longer_than_5_bytes() -> None:
    too_long = b"\x80\x80\x80\x80\x80\x01"
    cases = [
        (FindCoordinatorRequest, 3, too_long + bytes(4), 0, "key"),            # a compact string length
        (FindCoordinatorRequest, 4, b"\x00" + too_long + bytes(4), 1, "coordinator_keys"),  # array length
        (SaslAuthenticateRequest, 2, too_long + bytes(4), 0, "auth_bytes"),    # bytes length
        (MetadataRequest, 12, b"\x00\x00\x00" + too_long, 3, ""),              # tagged field count
        (MetadataRequest, 12, b"\x00\x00\x00\x01" + too_long + b"\x00", 4, ""),  # a tag
        (MetadataRequest, 12, b"\x00\x00\x00\x01\x01" + too_long, 5, ""),      # a tagged field's size
        (ApiVersionsRequest, 3, b"\x01" + too_long + b"\x00", 1, "client_software_version"),  # after an ""
    ]
    for cls, version, data, offset, path in cases:
        with pytest.raises(DecodeError) as ei:
            kcodec.decode(cls, data, version)
        e = ei.value
        assert e.reason == "unsigned varint longer than 5 bytes", e
        assert (e.offset, e.path) == (offset, path), e
    # five bytes are enough for 32 bits: 2**32 - 1 is read (and then found too long a length) ...
    with pytest.raises(DecodeError, match="4294967294"):
        kcodec.decode(SaslAuthenticateRequest, b"\xff\xff\xff\xff\x0f", 2)
    # ... but a fifth byte above 0x0f carries bits Kafka's 32-bit varints do not have
    with pytest.raises(DecodeError) as ei:
        kcodec.decode(MetadataRequest, b"\x00\x01\x00\x01" + b"\x80\x80\x80\x80\x10" + b"\x00", 12)
    assert (ei.value.reason, ei.value.offset) == ("unsigned varint exceeds 32 bits", 4)
    with pytest.raises(DecodeError, match="truncated unsigned varint"):
        kcodec.decode(SaslAuthenticateRequest, b"\x80\x80\x80\x80", 2)
    # in a request header v2 (its tag section)
    frame = i16(18) + i16(3) + i32(1) + i16(1) + b"c" + too_long
    with pytest.raises(DecodeError) as ei:
        kcodec.decode_request(len(frame).to_bytes(4, "big") + frame)
    assert (ei.value.reason, ei.value.offset, ei.value.message) == (
        "unsigned varint longer than 5 bytes", 4 + 11, "RequestHeader")


@pytest.mark.parametrize("cls,version,data,path,reason", [
    (FindCoordinatorRequest, 0, i16(-2) + b"ab", "key", "negative length -2 of string"),
    (FindCoordinatorRequest, 0, i16(-1) + b"ab", "key", "null string in a non-nullable field"),
    (FindCoordinatorRequest, 0, i16(-32768), "key", "negative length -32768 of string"),
    (FindCoordinatorRequest, 3, b"\x00\x00\x00", "key", "null string in a non-nullable field"),
    (DeleteTopicsRequest, 0, i32(-2) + i32(0), "topic_names", "negative length -2 of array"),
    (DeleteTopicsRequest, 0, i32(-1) + i32(0), "topic_names", "null array in a non-nullable field"),
    (MetadataRequest, 0, i32(-1), "topics", "null array in a non-nullable field"),
    (MetadataRequest, 1, i32(-2), "topics", "negative length -2 of array"),
    (FindCoordinatorRequest, 4, b"\x00\x00\x00", "coordinator_keys", "null array in a non-nullable field"),
    (SaslAuthenticateRequest, 0, i32(-2), "auth_bytes", "negative length -2 of bytes"),
    (SaslAuthenticateRequest, 0, i32(-1), "auth_bytes", "null bytes in a non-nullable field"),
    (SaslAuthenticateRequest, 0, i32(-(2**31)), "auth_bytes", "negative length -2147483648 of bytes"),
    (SaslAuthenticateRequest, 2, b"\x00\x00", "auth_bytes", "null bytes in a non-nullable field"),
    (ApiVersionsRequest, 3, b"\x00\x01\x00", "client_software_name", "null string in a non-nullable field"),
])
def test_negative_and_null_lengths(cls: type, version: int, data: bytes, path: str, reason: str) -> None:
    with pytest.raises(DecodeError) as ei:
        kcodec.decode(cls, data, version)
    e = ei.value
    assert (e.reason, e.path, e.offset) == (reason, path, 1 if cls is FindCoordinatorRequest and version == 4
                                            else 0)


def test_null_where_nullable() -> None:
    assert kcodec.decode(MetadataRequest, i32(-1), 1).topics is None
    assert kcodec.decode(MetadataRequest, b"\x00\x01\x00\x00", 12).topics is None
    header, _, _ = kcodec.decode_request_header(i32(10) + i16(3) + i16(1) + i32(5) + i16(-1))
    assert header.client_id is None


# ------------------------------------------------------------------------------------ nested paths

def _cluster(isr: list[int]) -> MetadataResponse:
    def partitions(n: int, marker: bool) -> list:
        return [Partition(partition_index=i, leader_id=1, replica_nodes=[1, 2],
                          isr_nodes=isr if marker and i == 0 else [1, 2]) for i in range(n)]
    return MetadataResponse(
        brokers=[Broker(node_id=1, host="a", port=9092), Broker(node_id=2, host="bb", port=9093)],
        cluster_id="c", controller_id=1,
        topics=[Topic(name="t0", partitions=partitions(2, False)),
                Topic(name="t1", partitions=partitions(2, True))])


MARK = [0x5A5A5A5A, 0x5B5B5B5B]
MARK_BYTES = b"".join(i32(v) for v in MARK)
ISR = "topics[1].partitions[0].isr_nodes"


@pytest.mark.parametrize("version", [1, 12])
def test_nested_path_and_offset(version: int) -> None:
    data = kcodec.encode(_cluster(MARK), version)
    assert kcodec.encode(kcodec.decode(MetadataResponse, data, version), version) == data
    s = data.index(MARK_BYTES)
    compact = version >= 9
    length_at = s - 1 if compact else s - 4
    assert data[length_at:s] == (b"\x03" if compact else i32(2))

    def fail(bad: bytes) -> DecodeError:
        with pytest.raises(DecodeError) as ei:
            kcodec.decode(MetadataResponse, bad, version)
        _check(ei.value, len(bad))
        return ei.value

    # a length that is null / negative
    bad = data[:length_at] + (b"\x00" if compact else i32(-2)) + data[s:]
    e = fail(bad)
    assert (e.path, e.offset) == (ISR, length_at)
    assert e.reason == ("null array in a non-nullable field" if compact else "negative length -2 of array")
    assert f"field {ISR}" in str(e) and f"MetadataResponse v{version}" in str(e)
    # a length larger than what is left
    bad = data[:length_at] + (b"\x7f" if compact else i32(126)) + data[s:]
    e = fail(bad)
    assert (e.path, e.offset) == (ISR, s) and e.reason.startswith("array of 126 elements")
    # the buffer ends inside the array: the enclosing array's minimum size already fails
    e = fail(data[:s + 5])
    assert e.path == "topics[1].partitions" and e.reason.startswith("array of 2 elements needs at least")
    # invalid UTF-8 in the second topic's name, and in the second broker's host
    at = data.index(b"t1")
    e = fail(data[:at] + b"\xff" + data[at + 1:])
    assert (e.path, e.offset) == ("topics[1].name", at)
    at = data.index(b"bb")
    e = fail(data[:at + 1] + b"\xfe" + data[at + 2:])
    assert (e.path, e.offset) == ("brokers[1].host", at + 1)
    if compact:  # a struct's own tag section: the path ends at the struct
        tags_at = s + len(MARK_BYTES) + 1  # after isr_nodes and an empty offline_replicas
        assert data[tags_at - 1:tags_at + 1] == b"\x01\x00"
        e = fail(data[:tags_at] + b"\x7f" + data[tags_at + 1:])
        assert (e.path, e.offset) == ("topics[1].partitions[0]", tags_at + 1)
        assert e.reason.startswith("127 tagged fields need at least 254 bytes")


def test_nested_path_in_a_known_tagged_field() -> None:
    msg = ApiVersionsResponse(supported_features=[
        ApiVersionsResponse.SupportedFeatureKey(name="f0", min_version=0, max_version=1),
        ApiVersionsResponse.SupportedFeatureKey(name="f1", min_version=0, max_version=1)])
    data = kcodec.encode(msg, 3)
    at = data.index(b"f1")
    with pytest.raises(DecodeError) as ei:
        kcodec.decode(ApiVersionsResponse, data[:at] + b"\xff" + data[at + 1:], 3)
    assert (ei.value.path, ei.value.offset) == ("supported_features[1].name", at)
    # a known tagged field whose size runs past the end is named too
    with pytest.raises(DecodeError) as ei:
        kcodec.decode(ApiVersionsResponse, data[:-3], 3)
    assert ei.value.path == "supported_features"
    # and a known tagged field whose value does not fill its declared size
    epoch = kcodec.encode(ApiVersionsResponse(finalized_features_epoch=5), 3)
    assert epoch.endswith(b"\x01\x01\x08" + bytes(7) + b"\x05")
    short = epoch[:-11] + b"\x01\x01\x09" + bytes(7) + b"\x05\x00"
    with pytest.raises(DecodeError) as ei:
        kcodec.decode(ApiVersionsResponse, short, 3)
    assert ei.value.path == "finalized_features_epoch" and "read 8 of its 9 bytes" in ei.value.reason


def test_decode_error_pickles() -> None:
    import pickle

    with pytest.raises(DecodeError) as ei:
        kcodec.decode(MetadataResponse, kcodec.encode(_cluster(MARK), 1)[:-3], 1)
    again = pickle.loads(pickle.dumps(ei.value))
    assert (again.reason, again.offset, again.path, again.message, again.version) == (
        ei.value.reason, ei.value.offset, ei.value.path, ei.value.message, ei.value.version)


# -------------------------------------------------------------------------------------- FrameSplitter

def test_frame_splitter_one_byte_at_a_time(real: dict[str, Real]) -> None:
    frames = [r.frame for r in real.values()] + [i32(0)]
    stream = b"".join(frames)
    fs = FrameSplitter(max_frame_size=1024)
    got = []
    for i in range(len(stream)):
        out = fs.feed(stream[i:i + 1])
        got += out
        assert fs.pending < 1024 + 4
    assert got == frames and fs.pending == 0
    # and in uneven chunks of every kind of buffer
    rng = random.Random(7)
    fs = FrameSplitter()
    got = []
    pos = 0
    while pos < len(stream):
        n = rng.randint(0, 300)
        chunk = stream[pos:pos + n]
        got += fs.feed(rng.choice([bytes, bytearray, memoryview])(chunk))
        pos += n
    assert got == frames and fs.pending == 0


@pytest.mark.parametrize("size", [1025, 2**31 - 1, -1, -(2**31)])
def test_frame_splitter_rejects_size(real: dict[str, Real], size: int) -> None:
    first = real["tansu_ApiVersions_v0_response.bin"].frame
    fs = FrameSplitter(max_frame_size=1024)
    assert fs.feed(first) == [first]
    bad = i32(size) + bytes(10)
    for b in bad[:3]:  # three bytes of a size prefix are not yet a size
        assert fs.feed(bytes([b])) == []
    with pytest.raises(DecodeError) as ei:
        fs.feed(bad[3:4])
    assert ei.value.offset == len(first)  # the offset in the stream
    assert str(size) in ei.value.reason
    assert fs.pending <= 4
    # the same in one feed after a complete frame: the good frame comes first, then the error,
    # whose offset is still the stream's
    fs = FrameSplitter(max_frame_size=1024)
    assert fs.feed(first + bad) == [first]
    with pytest.raises(DecodeError) as ei:
        fs.feed(b"")
    assert ei.value.offset == len(first)


def test_frame_splitter_limits() -> None:
    fs = FrameSplitter(max_frame_size=8)
    assert fs.feed(i32(8) + bytes(8) + i32(0)) == [i32(8) + bytes(8), i32(0)]
    with pytest.raises(DecodeError):
        FrameSplitter(max_frame_size=8).feed(i32(9))
    # a size within the default limit (100 MiB) but far beyond what arrived: nothing is allocated for it
    fs = FrameSplitter()
    tracemalloc.start()
    try:
        assert fs.feed(i32(100 * 1024 * 1024) + bytes(100)) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000 and fs.pending == 104
    with pytest.raises(DecodeError):
        FrameSplitter().feed(i32(100 * 1024 * 1024 + 1))



# ---------------------------------------------------------------------------------------- mutations

def _known(api_key: int, version: int) -> bool:
    try:
        cls = kcodec.message_class(api_key, "request")
    except UnsupportedVersionError:
        return False
    lo, hi = cls.VALID_VERSIONS
    return lo <= version <= hi


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        i = rng.randrange(4, len(b)) if len(b) > 4 else 4
        if op == 0 and i < len(b):
            b[i] = rng.randrange(256)
        elif op == 1 and i < len(b):
            b[i] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF])
        elif op == 2 and i < len(b):
            b[i] ^= 1 << rng.randrange(8)
        elif op == 3:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 4:
            del b[i:i + rng.randint(1, 4)]
        else:
            b[i:i + 4] = rng.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x80\x80\x80\x80\x80"])
    if rng.random() < 0.8:  # mostly keep the size prefix true, so the header and body are reached
        b[0:4] = (len(b) - 4).to_bytes(4, "big")
    return bytes(b)


def test_random_mutations(real: dict[str, Real]) -> None:
    """A few thousand mutations of real frames (fixed seed): each decodes, or raises DecodeError (or, for
    a request whose api key or version was hit, UnsupportedVersionError). What decodes strictly
    re-encodes, and what that re-encodes to decodes to the same message."""
    rng = random.Random(20240521)
    names = sorted(real)
    outcomes = {"ok": 0, "decode_error": 0, "unsupported": 0}
    for _ in range(4000):
        r = real[rng.choice(names)]
        data = _mutate(rng, r.frame)
        for strict in (True, False):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    header, msg = r.decode_frame(data, strict=strict)
                except DecodeError as e:
                    _check(e, len(data))
                    outcomes["decode_error"] += 1
                    continue
                except UnsupportedVersionError:
                    assert not r.response
                    header, _, _ = kcodec.decode_request_header(data, strict=strict)
                    assert not _known(header.api_key, header.api_version)
                    outcomes["unsupported"] += 1
                    continue
            assert all(issubclass(w.category, TrailingBytesWarning) for w in caught)
            assert not (strict and caught)
            outcomes["ok"] += 1
            version = header.api_version if not r.response else r.version
            again = kcodec.decode(type(msg), kcodec.encode(msg, version), version)
            assert again == msg
        # the mutated bytes after the header, as a body of the original message
        body = data[r.body_at:]
        try:
            kcodec.decode(r.cls, body, r.version)
        except DecodeError as e:
            _check(e, len(body))
    assert min(outcomes.values()) > 100, outcomes
