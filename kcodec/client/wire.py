"""Request frames with any api key, and response frames read without warnings.

The client frames requests itself (rather than with ``kcodec.encode_request``) because ListTopics'
api key is a client option: a broker may serve it under a key other than the one kcodec was loaded
with. Header versions follow Kafka's rule (flexible body, flexible header; ApiVersions responses
always use header v0).
"""

from __future__ import annotations

import struct
from typing import Any, Optional

import kcodec
from kcodec.messages import ApiVersionsResponse, RequestHeader, ResponseHeader

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")


def encode_request(req: Any, api_key: int, version: int, correlation_id: int, client_id: Optional[str]) -> bytes:
    """A whole frame for ``req`` sent under ``api_key`` (normally the class's own)."""
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    hv = 2 if type(req).is_flexible(version) else 1
    body = kcodec.encode(header, hv) + kcodec.encode(req, version)
    return _SIZE.pack(len(body)) + body


def correlation_id_of(frame: bytes) -> int:
    """Every response header starts with the correlation id, right after the size prefix."""
    if len(frame) < 8:
        raise kcodec.DecodeError(f"response frame of {len(frame)} bytes has no correlation id", 0)
    return int(_CORRELATION.unpack_from(frame, 4)[0])


def decode_response(frame: bytes, cls: Any, version: int) -> tuple[Any, int]:
    """The response body of a whole frame, and how many bytes the broker sent after it.

    Trailing bytes are tolerated (the caller may log them): librdkafka's mock cluster sends them,
    and a response must not fail because a broker wrote a field this version lacks.
    """
    if cls is ApiVersionsResponse:
        return _api_versions(frame, version), 0
    hv = 1 if cls.is_flexible(version) else 0
    _, pos = kcodec.decode_from(ResponseHeader, frame, hv, 4)
    msg, end = kcodec.decode_from(cls, frame, version, pos)
    return msg, len(frame) - end


def _api_versions(frame: bytes, version: int) -> Any:
    # kcodec.decode_response reads a broker's v0-layout UNSUPPORTED_VERSION answer, strictly. When
    # that fails, read tolerantly: v0 first if the body starts with error 35 (the v0 answer), then
    # the version asked for, whose error is the one reported.
    try:
        return kcodec.decode_response(frame, 18, version)[1]
    except kcodec.DecodeError:
        pass
    _, pos = kcodec.decode_from(ResponseHeader, frame, 0, 4)
    if frame[pos:pos + 2] == b"\x00\x23" and version:
        try:
            return kcodec.decode_from(ApiVersionsResponse, frame, 0, pos)[0]
        except kcodec.DecodeError:
            pass
    return kcodec.decode_from(ApiVersionsResponse, frame, version, pos)[0]
