"""Frames that real clients and brokers put on the wire (../shared/vectors), decoded and re-encoded.

- every request frame (confluent-kafka/librdkafka, kafka-python, aiokafka, kafkajs) decodes with the
  header index.json records, agrees with the fields the probe decoder read, and re-encodes byte for byte;
- every response frame (librdkafka's mock cluster, Tansu) decodes, and re-encodes byte for byte where
  the broker wrote canonical bytes; the requests the probe sent to those brokers decode too;
- the quirks the vectors README lists get the documented tolerance: strict decoding raises a
  DecodeError that names the trailing bytes, strict=False decodes with a TrailingBytesWarning;
- librdkafka's mock answers ApiVersions v3 with a frame that is valid at no version: DecodeError at
  every version, never another exception (what it holds is spelled out below);
- the 1,000-topic Metadata payloads decode to 1,000 topics / 10,000 partitions and re-encode exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import kcodec
from kcodec import DecodeError, TrailingBytesWarning
from kcodec.errors import ErrorCode
from kcodec.messages import (ApiVersionsResponse, MetadataRequest, MetadataResponse, RequestHeader,
                             ResponseHeader)

REAL = "vectors/real-frames"
METADATA = "vectors/metadata"

# Only to list the files for parametrization at collection time (same rule as conftest's SHARED);
# every test reads its bytes through the ``shared`` fixture.
_GUESS = Path(os.environ.get("KCODEC_SHARED", Path(__file__).resolve().parents[1].parent / "shared")) / REAL
NAMES = sorted(p.name for p in _GUESS.glob("*.bin")) if _GUESS.is_dir() else []
REQUESTS = [n for n in NAMES if not n.endswith("_response.bin")]
RESPONSES = [n for n in NAMES if n.endswith("_response.bin")]

# The README's quirks: frames whose body is followed by bytes the schema does not read.
TRAILING = {
    "confluent_Metadata_v12_alltopics.bin": 3,      # librdkafka all-topics Metadata request, v9+
    "librdkafkamock_Metadata_v12_response.bin": 1,  # mock writes the body's tag section twice
    "librdkafkamock_ApiVersions_v3_response.bin": 5,  # malformed error frame, see its own test
}
# Well-formed, but not canonical: Tansu writes tagged fields that hold their defaults (see its test).
NON_CANONICAL = {"tansu_ApiVersions_v3_response.bin"}


@pytest.fixture(scope="session")
def index(shared: Path) -> dict:
    return json.loads((shared / REAL / "index.json").read_text())


def _frame(shared: Path, name: str) -> bytes:
    return (shared / REAL / name).read_bytes()


def _resized(frame: bytes, drop: int) -> bytes:
    """The frame without its last ``drop`` bytes, with the size prefix to match."""
    body = frame[4:len(frame) - drop]
    return len(body).to_bytes(4, "big") + body


def test_vectors_are_the_indexed_ones(shared: Path, index: dict) -> None:
    on_disk = sorted(p.name for p in (shared / REAL).glob("*.bin"))
    assert on_disk == sorted(index) == NAMES
    assert len(REQUESTS) >= 30 and len(RESPONSES) >= 7
    for name, entry in index.items():
        frame = _frame(shared, name)
        assert hashlib.sha256(frame).hexdigest() == entry["sha256"], name
        assert len(frame) == entry["frame_bytes"], name
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4 == entry.get("size_field", len(frame) - 4)


# ------------------------------------------------------------------------------------------ requests

def _probe_view(api_name: str, version: int, msg: object, keys: set[str]) -> dict:
    """The decoded request in the probe decoder's shape (its names; configs as a dict; DeleteTopics'
    topics as names, whether the version carries them as ``topic_names`` or as ``topics[].name``)."""
    d = kcodec.to_dict(msg)
    if api_name == "CreateTopics":
        for t in d["topics"]:
            t["configs"] = {c["name"]: c["value"] for c in t["configs"]}
    elif api_name == "DeleteTopics":
        d["topics"] = d["topic_names"] if version < 6 else [t["name"] for t in d["topics"]]
    elif api_name == "DescribeConfigs":
        for r in d["resources"]:
            r["keys"] = r.pop("configuration_keys")
    elif api_name == "Metadata":
        if d["topics"] is not None:
            d["topics"] = [t["name"] for t in d["topics"]]
    if "tags" in keys:
        unknown = getattr(msg, "unknown_tagged_fields", None) or {}
        d["tags"] = {str(t): v.hex() for t, v in unknown.items()}
    return {k: d[k] for k in keys}


@pytest.mark.parametrize("name", REQUESTS)
def test_request_frame(shared: Path, index: dict, name: str) -> None:
    entry = index[name]
    frame = _frame(shared, name)
    trailing = TRAILING.get(name, 0)
    probe = entry.get("decoded_by_probe")
    if probe is not None:
        assert probe["trailing_bytes"] == trailing  # the probe saw the same quirk

    header, body_at, end = kcodec.decode_request_header(frame)
    assert end == len(frame)
    hv = kcodec.request_header_version(entry["api_key"], entry["api_version"])
    assert hv == entry["request_header_version"]
    # v1: key, version, correlation id, int16-length client id; v2 adds a tag section (one 0x00 here)
    assert body_at == 4 + 8 + 2 + len(entry["client_id"].encode()) + (1 if hv == 2 else 0)

    if trailing:
        with pytest.raises(DecodeError, match=f"{trailing} trailing bytes"):
            kcodec.decode_request(frame)
        with pytest.warns(TrailingBytesWarning, match=f"{trailing} trailing bytes"):
            header, req = kcodec.decode_request(frame, strict=False)
    else:
        header, req = kcodec.decode_request(frame)
    assert (header.api_key, header.api_version) == (entry["api_key"], entry["api_version"])
    assert header.correlation_id == entry["correlation_id"]
    assert header.client_id == entry["client_id"]
    assert type(req) is kcodec.message_class(entry["api_key"], "request")
    assert type(req).__name__ == entry["api_name"] + "Request"

    if probe is not None:
        keys = set(probe) - {"trailing_bytes"}
        assert _probe_view(entry["api_name"], entry["api_version"], req, keys) == \
            {k: probe[k] for k in keys}

    again = kcodec.encode_request(req, header.api_version, header.correlation_id, header.client_id)
    # byte for byte; for the quirky frame, byte for byte up to the bytes the schema does not read
    assert again == _resized(frame, trailing)


def test_librdkafka_alltopics_metadata_quirk(shared: Path) -> None:
    """librdkafka's all-topics Metadata v12 request: null topics, two false bools, an empty tag section,
    then 01 00 00 that no version of the schema reads. Strict: DecodeError at the first of them."""
    frame = _frame(shared, "confluent_Metadata_v12_alltopics.bin")
    assert frame[-7:] == bytes.fromhex("00 000000 010000")
    with pytest.raises(DecodeError) as ei:
        kcodec.decode_request(frame)
    e = ei.value
    assert e.reason.startswith("3 trailing bytes after the body")
    assert (e.offset, e.path, e.message, e.version) == (len(frame) - 3, "", "MetadataRequest", 12)
    with pytest.warns(TrailingBytesWarning, match="^3 trailing bytes after the body at byte 28 of MetadataRequest"):
        _, req = kcodec.decode_request(frame, strict=False)
    assert req == MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)


@pytest.mark.parametrize("name", RESPONSES)
def test_request_the_probe_sent(index: dict, name: str) -> None:
    """The requests that drew each broker's response (index.json keeps their bytes) decode and round-trip."""
    entry = index[name]
    frame = bytes.fromhex(entry["request_sent_hex"])
    header, req = kcodec.decode_request(frame)
    assert (header.api_key, header.api_version) == (entry["api_key"], entry["api_version"])
    assert (header.correlation_id, header.client_id) == (entry["correlation_id"], "kcodec-probe")
    assert kcodec.encode_request(req, header.api_version, header.correlation_id, header.client_id) == frame


# ----------------------------------------------------------------------------------------- responses

@pytest.mark.parametrize("name", RESPONSES)
def test_response_frame(shared: Path, index: dict, name: str) -> None:
    entry = index[name]
    frame = _frame(shared, name)
    key, version = entry["api_key"], entry["api_version"]
    hv = kcodec.response_header_version(key, version)
    assert hv == entry["response_header_version"]
    if key == 18:
        assert hv == 0  # every ApiVersions response has response header v0, even for a flexible body
    trailing = TRAILING.get(name, 0)
    if trailing:
        with pytest.raises(DecodeError, match=f"{trailing} trailing bytes"):
            kcodec.decode_response(frame, key, version)
        with pytest.warns(TrailingBytesWarning, match=f"{trailing} trailing bytes"):
            header, msg = kcodec.decode_response(frame, key, version, strict=False)
    else:
        header, msg = kcodec.decode_response(frame, key, version)
    assert header.correlation_id == entry["correlation_id"]
    assert type(msg) is kcodec.message_class(key, "response")
    if name == "librdkafkamock_ApiVersions_v3_response.bin" or name in NON_CANONICAL:
        return  # their own tests below
    again = kcodec.encode_response(msg, version, header.correlation_id)
    assert again == _resized(frame, trailing)
    if key == 3:
        assert msg.error_code == 0 and msg.brokers  # an all-topics request
        if name.startswith("librdkafkamock"):
            assert msg.topics == []
        for b in msg.brokers:
            assert b.host == "127.0.0.1" and 0 < b.port < 65536
    if key == 18:
        assert msg.error_code == 0
        assert any(k.api_key == 18 for k in msg.api_keys)


def test_librdkafka_mock_metadata_v12_extra_byte(shared: Path) -> None:
    """The mock ends a flexible Metadata response with its tag section twice: one more 0x00."""
    frame = _frame(shared, "librdkafkamock_Metadata_v12_response.bin")
    assert frame[-2:] == b"\x00\x00"
    with pytest.raises(DecodeError) as ei:
        kcodec.decode_response(frame, 3, 12)
    e = ei.value
    assert e.reason.startswith("1 trailing bytes after the body")
    assert (e.offset, e.path, e.message, e.version) == (len(frame) - 1, "", "MetadataResponse", 12)
    with pytest.warns(TrailingBytesWarning, match="1 trailing bytes"):
        header, msg = kcodec.decode_response(frame, 3, 12, strict=False)
    assert msg.cluster_id.startswith("mockCluster")
    assert kcodec.encode_response(msg, 12, header.correlation_id) == _resized(frame, 1)


def test_tansu_apiversions_v3_writes_default_tagged_fields(shared: Path) -> None:
    """Tansu's ApiVersions v3 body is well-formed but not canonical: its tag section carries all four
    known tagged fields (supported_features, finalized_features_epoch, finalized_features,
    zk_migration_ready) with their default values, which Kafka's own writer (and kcodec's) omits.
    kcodec keeps values, not presence, so it re-encodes the canonical form: the same frame with those
    20 bytes replaced by an empty tag section. Both decode to the same message."""
    frame = _frame(shared, "tansu_ApiVersions_v3_response.bin")
    tags = bytes.fromhex("04" "00 01 01" "01 08 ffffffffffffffff" "02 01 01" "03 01 00")
    assert frame.endswith(tags)
    header, msg = kcodec.decode_response(frame, 18, 3)
    assert msg.error_code == 0 and len(msg.api_keys) == 36 and msg.throttle_time_ms == 0
    assert (msg.supported_features, msg.finalized_features_epoch, msg.finalized_features,
            msg.zk_migration_ready) == ([], -1, [], False)
    assert msg.unknown_tagged_fields is None
    body = frame[4:-len(tags)] + b"\x00"  # an empty tag section
    canonical = len(body).to_bytes(4, "big") + body
    assert kcodec.encode_response(msg, 3, header.correlation_id) == canonical
    assert len(canonical) == len(frame) - 19
    assert kcodec.decode_response(canonical, 18, 3) == (header, msg)


def test_librdkafka_mock_apiversions_v3_error_frame(shared: Path) -> None:
    """The mock supports ApiVersions 0-2 and answers a v3 request with a frame valid at no version.

    Its body (after size 17 and correlation id 77) is 13 bytes:
        00 23 | 01 | 00 12 00 00 00 02 | 00 00 00 00
    error_code 35 (UNSUPPORTED_VERSION); a 1-byte count that is the entry count itself (1; compact
    arrays store count + 1, classic ones an int32); one entry api_key 18, versions 0-2 without tagged
    fields; throttle_time_ms 0; no tag section. That is v1's layout with a 1-byte count.

    It is NOT the v0-format error response that Kafka brokers send and clients fall back to: read at
    v0 (or v1, v2) the int32 count is 0x01001200 = 16,781,824 entries with 7 bytes left, a DecodeError.
    Read at v3 (or v4) it parses as error 35, an empty array, throttle_time_ms 0x00120000 and an empty
    tag section, then 5 bytes nothing reads: strict raises DecodeError naming them; strict=False gives
    the error code with a TrailingBytesWarning (the rest of that message is garbage). Only the error
    code, the body's first two bytes at every version, survives.
    """
    frame = _frame(shared, "librdkafkamock_ApiVersions_v3_response.bin")
    assert frame == bytes.fromhex("00000011 0000004d 0023 01 0012 0000 0002 00000000")

    for version in (0, 1, 2):
        with pytest.raises(DecodeError) as ei:
            kcodec.decode_response(frame, 18, version, strict=False)
        e = ei.value
        assert e.reason.startswith("array of 16781824 elements needs at least")
        assert (e.offset, e.path, e.message, e.version) == (14, "api_keys", "ApiVersionsResponse", version)

    for version in (3, 4):
        with pytest.raises(DecodeError) as ei:
            kcodec.decode_response(frame, 18, version)
        e = ei.value
        assert e.reason.startswith("5 trailing bytes after the body")
        assert (e.offset, e.path, e.version) == (16, "", version)
        with pytest.warns(TrailingBytesWarning, match="^5 trailing bytes after the body at byte 16 of "):
            header, msg = kcodec.decode_response(frame, 18, version, strict=False)
        assert header.correlation_id == 77
        assert msg.error_code == ErrorCode.UNSUPPORTED_VERSION == 35
        assert msg.api_keys == [] and msg.throttle_time_ms == 0x00120000

    # With the count widened to an int32, the same bytes are a valid v1 error response.
    fixed = bytes.fromhex("00000014 0000004d 0023 00000001 0012 0000 0002 00000000")
    _, msg = kcodec.decode_response(fixed, 18, 1)
    assert msg == ApiVersionsResponse(error_code=35, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)], throttle_time_ms=0)


def test_apiversions_v0_fallback() -> None:
    """What the README describes a real broker doing: an ApiVersions request newer than it knows gets
    a v0-format answer with error 35 and its range. Its body does not decode at the version asked for
    (kafka-python opens with v4); decode_response then reads it as v0, as Kafka's client does, and the
    client retries lower."""
    answer = ApiVersionsResponse(error_code=35, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=3)])
    frame = kcodec.encode_response(answer, 0, 9)
    assert frame == bytes.fromhex("00000010 00000009 0023 00000001 0012 0000 0003")
    for version in (3, 4):
        with pytest.raises(DecodeError) as ei:
            kcodec.decode(ApiVersionsResponse, frame[8:], version)
        assert ei.value.path == "api_keys"  # compact count 0 = null, and the array is not nullable
        header, msg = kcodec.decode_response(frame, 18, version)
        assert header == ResponseHeader(correlation_id=9) and msg == answer
    header, msg = kcodec.decode_response(frame, 18, 0)
    assert header == ResponseHeader(correlation_id=9) and msg == answer


def test_request_header_versions_of_apiversions(shared: Path) -> None:
    """ApiVersions requests v3+ use request header v2 (a tag section after the client id)."""
    for name, hv in [("kafkapython_ApiVersions_v2.bin", 1), ("kafkapython_ApiVersions_v3.bin", 2),
                     ("kafkapython_ApiVersions_v4.bin", 2), ("confluent_ApiVersions_v3.bin", 2)]:
        frame = _frame(shared, name)
        header, body_at, _ = kcodec.decode_request_header(frame)
        assert kcodec.request_header_version(18, header.api_version) == hv
        again, _ = kcodec.decode_from(RequestHeader, frame, hv, 4)
        assert again == header
        if hv == 2:
            assert frame[body_at - 1] == 0  # the header's (empty) tag section


# ------------------------------------------------------------------------------- 1,000-topic metadata

def _check_1k(msg: MetadataResponse, version: int) -> None:
    assert len(msg.topics) == 1000
    assert sum(len(t.partitions) for t in msg.topics) == 10_000
    assert len(msg.brokers) == 6
    nodes = {b.node_id for b in msg.brokers}
    assert len({t.name for t in msg.topics}) == 1000
    for t in msg.topics:
        assert 20 <= len(t.name) <= 40
        assert [p.partition_index for p in t.partitions] == list(range(10))
        for p in t.partitions:
            assert len(p.replica_nodes) == 3 and set(p.replica_nodes) <= nodes
            assert p.leader_id in p.replica_nodes
    if version >= 12:
        assert msg.cluster_id


@pytest.mark.parametrize("version", [1, 12])
def test_metadata_1k_body(shared: Path, version: int) -> None:
    data = (shared / METADATA / f"metadata_v{version}_1k_body.bin").read_bytes()
    msg = kcodec.decode(MetadataResponse, data, version)
    _check_1k(msg, version)
    assert kcodec.encode(msg, version) == data
    assert kcodec.encoded_size(msg, version) == len(data)


@pytest.mark.parametrize("version", [1, 12])
def test_metadata_1k_framed(shared: Path, version: int) -> None:
    frame = (shared / METADATA / f"metadata_v{version}_1k_framed.bin").read_bytes()
    body = (shared / METADATA / f"metadata_v{version}_1k_body.bin").read_bytes()
    header_len = 4 + (1 if kcodec.response_header_version(3, version) == 1 else 0)
    assert frame[4 + header_len:] == body
    header, msg = kcodec.decode_response(frame, 3, version)
    _check_1k(msg, version)
    assert msg == kcodec.decode(MetadataResponse, body, version)
    assert kcodec.encode_response(msg, version, header.correlation_id) == frame
