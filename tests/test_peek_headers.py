"""``kcodec.peek_request_header`` and ``peek_response_header``: always what decode_request_header and
decode_response read of a header, or their error, on both backends."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

import kcodec
from kcodec import definitions
from kcodec.messages import (ApiVersionsResponse, ControlledShutdownRequest, MetadataRequest, MetadataResponse,
                             ProduceRequest)


def _reference(frame: Any, strict: bool) -> Any:
    """What decode_request_header says, as peek_request_header's tuple, or the error it raises."""
    try:
        h, pos, end = kcodec.decode_request_header(frame, strict=strict)
    except kcodec.KcodecError as e:
        return (type(e), str(e))
    return (h.request_api_key, h.request_api_version, h.correlation_id, h.client_id, pos, end)


def _peeked(frame: Any, strict: bool) -> Any:
    try:
        return tuple(kcodec.peek_request_header(frame, strict=strict))
    except kcodec.KcodecError as e:
        return (type(e), str(e))


def _agree(frame: Any) -> None:
    for strict in (True, False):
        assert _peeked(frame, strict) == _reference(frame, strict), (frame, strict)


def _frames() -> list[bytes]:
    """Request frames of every header version: v0 (ControlledShutdown v0), v1 and v2, client ids null,
    empty and not ASCII."""
    out = [kcodec.encode_request(ControlledShutdownRequest(broker_id=1), 0, correlation_id=5)]
    for version in (0, 8, 9, 12):  # Metadata: header v1 up to 8, v2 from 9
        for client in (None, "", "kcodec-é-✓"):
            out.append(kcodec.encode_request(MetadataRequest(topics=[]), version, correlation_id=-7, client_id=client))
    out.append(kcodec.encode_request(ProduceRequest(acks=-1, timeout_ms=5), 9, correlation_id=1 << 30, client_id="p"))
    return out


def test_the_fields_of_every_header_version() -> None:
    for frame in _frames():
        h, pos, end = kcodec.decode_request_header(frame)
        peek = kcodec.peek_request_header(frame)
        assert peek == (h.request_api_key, h.request_api_version, h.correlation_id, h.client_id, pos, end)
        assert (peek.api_key, peek.body_offset, peek.end) == (h.request_api_key, pos, len(frame))
        _agree(frame)
        _agree(bytearray(frame))  # other buffers take decode_request_header's path: the same answer
        _agree(memoryview(frame))


def test_trailing_bytes_and_unknown_api_keys() -> None:
    frame = kcodec.encode_request(MetadataRequest(topics=None), 12, correlation_id=3, client_id="c")
    _agree(frame + b"tail")  # strict: an error; not strict: the frame's own end
    assert kcodec.peek_request_header(frame + b"tail", strict=False).end == len(frame)
    unknown = b"\x00\x00\x00\x0a" + bytes.fromhex("7cff 0000 00000001 ffff")  # read as header v1
    assert kcodec.peek_request_header(unknown) == (31999, 0, 1, None, 14, 14)
    _agree(unknown)


def test_tagged_fields_in_a_v2_header() -> None:
    frame = kcodec.encode_request(MetadataRequest(topics=None), 12, correlation_id=3, client_id="c")
    at = 4 + 2 + 2 + 4 + 2 + 1  # the header's tagged-field count, after the client id "c"
    assert frame[at] == 0
    tagged = frame[:at] + bytes([1, 7, 2]) + b"xy" + frame[at + 1:]  # one unknown tag: 7, two bytes
    tagged = struct.pack(">i", len(tagged) - 4) + tagged[4:]
    _agree(tagged)
    assert kcodec.peek_request_header(tagged, strict=False).body_offset == at + 5


def test_malformed_headers() -> None:
    frame = kcodec.encode_request(MetadataRequest(topics=None), 12, correlation_id=3, client_id="client")
    cases = [frame[:n] for n in range(len(frame))]  # every truncation, size prefix unchanged
    cases += [struct.pack(">i", n - 4) + frame[4:n] for n in range(4, len(frame))]  # and re-prefixed
    cases += [struct.pack(">i", -1) + frame[4:], struct.pack(">i", 1 << 30) + frame[4:]]
    head = frame[:14]
    cases += [head[:12] + struct.pack(">h", n) + frame[14:] for n in (-2, -1, 6, 7, 200, 0x7FFF)]  # client id lengths
    cases.append(head + b"\xff\xfe\xfd\xfc\xfb\xfa" + frame[20:])  # invalid UTF-8 in the client id
    cases.append(frame[:20] + b"\x80" + frame[21:])  # a tagged-field count that does not end
    for case in cases:
        _agree(case)


def test_random_mutations_of_real_headers() -> None:
    rng = random.Random(32)
    frames = _frames()
    for _ in range(3000):
        frame = bytearray(rng.choice(frames))
        for _ in range(rng.randint(1, 3)):
            frame[rng.randrange(min(len(frame), 24))] = rng.randrange(256)
        _agree(bytes(frame))


def test_every_request_api_at_its_first_and_last_version() -> None:
    for key in definitions.api_keys():
        name = definitions.by_api_key(key, "request")
        versions = definitions.get(name).versions
        for version in (versions[0], versions[-1], versions[-1] + 1):
            head = struct.pack(">hhih", key, version, 9, 2) + b"id" + b"\x00" * 4
            _agree(struct.pack(">i", len(head)) + head)


def _response_reference(frame: Any, key: Any, version: Any, strict: bool) -> Any:
    """decode_response's header, as peek_response_header's tuple, or the error its header step raises."""
    try:
        cls = kcodec.message_class(key, "response")
        h, _ = kcodec.decode_response(frame, key, version, strict=strict)
    except kcodec.DecodeError as e:
        if e.message == cls.__name__:  # the body's error, after the header was read: not the peek's
            return ("body", struct.unpack_from(">i", frame, 4)[0])
        return (type(e), str(e))
    except kcodec.KcodecError as e:
        return (type(e), str(e))
    return ("body", h.correlation_id)


def _response_peeked(frame: Any, key: Any, version: Any, strict: bool) -> Any:
    try:
        corr, pos, end = kcodec.peek_response_header(frame, key, version, strict=strict)
    except kcodec.KcodecError as e:
        return (type(e), str(e))
    return ("body", corr)


def _responses() -> list[tuple[bytes, int, int]]:
    meta = MetadataResponse(brokers=[], topics=[], cluster_id=None, controller_id=1)
    out = [(kcodec.encode_response(meta, v, correlation_id=c), 3, v) for v in (0, 8, 9, 12) for c in (0, -5)]
    out.append((kcodec.encode_response(ApiVersionsResponse(error_code=0), 3, correlation_id=4), 18, 3))  # header v0
    return out


def test_response_headers_agree_with_decode_response() -> None:
    for frame, key, version in _responses():
        h, resp = kcodec.decode_response(frame, key, version)
        corr, pos, end = kcodec.peek_response_header(frame, key, version)
        assert (corr, end) == (h.correlation_id, len(frame))
        assert kcodec.decode_from(type(resp), frame, version, pos, end) == (resp, end)  # the body starts at pos
        for case in (frame, bytearray(frame), memoryview(frame), frame + b"x"):
            for strict in (True, False):
                assert _response_peeked(case, key, version, strict) == _response_reference(case, key, version, strict)


def test_malformed_and_mutated_responses() -> None:
    rng = random.Random(33)
    responses = _responses()
    cases = []
    for frame, key, version in responses:
        cases += [(frame[:n], key, version) for n in range(12)]
        cases += [(struct.pack(">i", n) + frame[4:12], key, version) for n in (-1, 3, 4, 5, 8, 1 << 30)]
    frame, key, version = responses[-2]  # Metadata v12: header v1, a tagged field in it
    cases.append((struct.pack(">i", len(frame) + 3) + frame[4:8] + bytes([1, 9, 1, 0]) + frame[9:], key, version))
    cases.append((frame[:8] + b"\x80" + frame[9:], key, version))  # a tag count that does not end
    for _ in range(2000):
        frame, key, version = rng.choice(responses)
        mutated = bytearray(frame)
        mutated[rng.randrange(10)] = rng.randrange(256)
        cases.append((bytes(mutated), key, version))
    cases += [(responses[0][0], 31999, 0), (responses[0][0], 3, "1"), (b"\x00", 31999, 0)]  # unknown key, bad version
    for case, key, version in cases:
        for strict in (True, False):
            assert _response_peeked(case, key, version, strict) == _response_reference(case, key, version, strict), case
