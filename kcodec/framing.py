"""Request and response headers, whole frames (size prefix + header + body), and a stream splitter.

Header versions follow each API's flexible versions, with Kafka's exceptions: ApiVersions responses
always use response header v0 (a client must read them before it knows what the broker speaks), and
ControlledShutdown v0 requests use request header v0, which has no client id.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple, Optional

from . import definitions
from .core.api import SPLICE_THRESHOLD, _check_message, _check_version, encode_buffers, finish
from .core.coerce import as_bytes_view, flat_view
from .core.backend import backend
from .buffers import Buffers
from .exceptions import DecodeError, EncodeError, UnsupportedVersionError
from .core.ir import program_for

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes
_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
_CLASSIC_HEAD = struct.Struct(">ihhih")  # size, api key, api version, correlation id, client id length
_SIZE_CORR = struct.Struct(">ii")  # a response's size and correlation id
_CACHED_VERSIONS = 4096  # (api key, version, kind) entries kept: hostile versions cannot grow it further


_MESSAGES: list[Any] = []


def _messages() -> Any:
    # Imported on first use (kcodec.messages sits above this layer) and kept: a function-level
    # ``from . import`` runs importlib's Python fromlist handling at every call.
    if not _MESSAGES:
        from . import messages

        _MESSAGES.append(messages)
    return _MESSAGES[0]


def _flexible(api_key: int, api_version: int, kind: str) -> bool:
    try:
        mdef = definitions.get(definitions.by_api_key(api_key, kind))
    except KeyError:
        raise UnsupportedVersionError(f"no {kind} with api key {api_key}") from None
    return mdef.is_flexible(api_version)


def _header_rule(api_key: Optional[int], api_version: int, kind: str, flexible: bool) -> int:
    """Kafka's header versions: flexible bodies have flexible headers, but for two exceptions."""
    if kind == "request":
        if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
            return 0
        return 2 if flexible else 1
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible else 0


_HEADER_VERSIONS: dict[tuple[int, int, str], int] = {}


def _header_version(api_key: int, api_version: int, kind: str) -> int:
    # Cached: a decoded frame asks once or twice, and the definitions' lookups cost several microseconds.
    key = (api_key, api_version, kind)
    hv = _HEADER_VERSIONS.get(key)
    if hv is None:
        hv = _header_rule(api_key, api_version, kind, _flexible(api_key, api_version, kind))
        if len(_HEADER_VERSIONS) < _CACHED_VERSIONS:
            _HEADER_VERSIONS[key] = hv
    return hv


def request_header_version(api_key: int, api_version: int) -> int:
    return _header_version(api_key, api_version, "request")


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return _header_version(api_key, api_version, "response")


def header_version(cls: Any, api_version: int) -> int:
    """The header version of a request or response class at a version, by the same rules: by the class,
    not its api key, which a request may be sent under another of (KIP-142's ListTopics)."""
    return _header_rule(cls.API_KEY, api_version, cls.KIND, cls.is_flexible(api_version))


def _frame(parts: list[bytes]) -> bytes:
    size = sum(map(len, parts))
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes exceeds the int32 size prefix")
    return b"".join([_SIZE.pack(size), *parts])


def _new_request_header(req: Any, version: int, correlation_id: int, client_id: Optional[str],
                    api_key: Optional[int]) -> tuple[Any, bytes]:
    """The request's class and its encoded header (``api_key``: the class's own when None)."""
    cls = _check_message(req)
    _check_version(version)
    if cls.KIND != "request":
        raise EncodeError(f"{cls.__name__} is not a request")
    hv = header_version(cls, version)
    header = _messages().RequestHeader(request_api_key=cls.API_KEY if api_key is None else api_key,
                                       request_api_version=version, correlation_id=correlation_id,
                                       client_id=client_id)
    if hv == 0:
        header.client_id = ""  # v0 has no client id; an empty one is its default
    return cls, backend.encode(program_for(type(header), hv), header)


def _new_response_header(msg: Any, version: int, correlation_id: int) -> tuple[Any, bytes]:
    cls = _check_message(msg)
    _check_version(version)
    if cls.KIND != "response":
        raise EncodeError(f"{cls.__name__} is not a response")
    header = _messages().ResponseHeader(correlation_id=correlation_id)
    return cls, backend.encode(program_for(type(header), header_version(cls, version)), header)


def encode_request(req: Any, version: int, correlation_id: int, client_id: Optional[str] = None) -> bytes:
    """A whole request frame: size prefix, request header, body."""
    cls, header = _new_request_header(req, version, correlation_id, client_id, None)
    return _frame([header, backend.encode(program_for(cls, version), req)])


def encode_response(msg: Any, version: int, correlation_id: int) -> bytes:
    """A whole response frame: size prefix, response header, body."""
    cls, header = _new_response_header(msg, version, correlation_id)
    return _frame([header, backend.encode(program_for(cls, version), msg)])


def _frame_buffers(header: bytes, msg: Any, version: int, threshold: int) -> Buffers:
    body = encode_buffers(msg, version, threshold=threshold)
    size = len(header) + body.nbytes
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes exceeds the int32 size prefix")
    return Buffers([_SIZE.pack(size) + header, *body], 4 + size)


def encode_request_buffers(req: Any, version: int, correlation_id: int, client_id: Optional[str] = None, *,
                           api_key: Optional[int] = None, threshold: int = SPLICE_THRESHOLD) -> Buffers:
    """encode_request as buffers to write one after the other (``socket.sendmsg``,
    ``transport.writelines``): records fields, and bytes fields of at least ``threshold`` bytes, are the
    caller's own buffers, never copied (see ``kcodec.encode_buffers``). ``api_key`` sends the request
    under another key than its class's (a broker may serve KIP-142's ListTopics elsewhere); the header
    version still follows the class."""
    _, header = _new_request_header(req, version, correlation_id, client_id, api_key)
    return _frame_buffers(header, req, version, threshold)


def encode_response_buffers(msg: Any, version: int, correlation_id: int, *,
                            threshold: int = SPLICE_THRESHOLD) -> Buffers:
    """encode_response as buffers, the record batches of a Fetch response the caller's own (see
    encode_request_buffers)."""
    _, header = _new_response_header(msg, version, correlation_id)
    return _frame_buffers(header, msg, version, threshold)


def _frame_bounds(frame: Any, strict: bool) -> tuple[memoryview, int]:
    """The frame's bytes and the end of its body, from the size prefix (a non-contiguous frame copied)."""
    mv = as_bytes_view(frame)
    if len(mv) < 4:
        raise DecodeError(f"expected a 4-byte size prefix, {len(mv)} bytes given", 0)
    try:
        size = _SIZE.unpack_from(mv, 0)[0]
    except BufferError:  # not contiguous: copied once for the header and the body (a check costs every frame)
        mv = flat_view(mv)
        size = _SIZE.unpack_from(mv, 0)[0]
    if size < 0:
        raise DecodeError(f"negative frame size {size}", 0)
    end = 4 + size
    if end > len(mv):
        raise DecodeError(f"frame size {size} exceeds the {len(mv) - 4} bytes given", 0)
    if end < len(mv) and strict:
        raise DecodeError(f"{len(mv) - end} bytes after the frame (pass strict=False to tolerate them)", end)
    return mv, end


def _request_header(frame: Any, strict: bool) -> tuple[memoryview, Any, int, int]:
    mv, end = _frame_bounds(frame, strict)
    if end - 4 < 4:
        raise DecodeError("expected a request header, the frame is too short", 4)
    api_key, api_version = _KEY_VERSION.unpack_from(mv, 4)
    try:
        hv = request_header_version(api_key, api_version)
    except UnsupportedVersionError:
        hv = 1
    header, pos = backend.decode(program_for(_messages().RequestHeader, hv), mv, 4, end)
    return mv, header, pos, end


def decode_request_header(frame: Any, *, strict: bool = True) -> tuple[Any, int, int]:
    """The request header of a frame, the offset where its body starts, and the frame's end.

    Works for api keys and versions kcodec does not know (a broker must still answer them): those
    headers are read as v1, the classic layout every request starts with.
    """
    _, header, pos, end = _request_header(frame, strict)
    return header, pos, end


class RequestHeaderFields(NamedTuple):
    """A request header's fields, the offset where the body starts and the frame's end (``peek_request_header``)."""
    api_key: int
    api_version: int
    correlation_id: int
    client_id: Optional[str]
    body_offset: int
    end: int


def peek_request_header(frame: Any, *, strict: bool = True) -> RequestHeaderFields:
    """``decode_request_header``'s fields as a tuple, without a ``RequestHeader`` object: for a reader that
    only routes or counts frames. The common headers (v1, and v2 without tagged fields) are read here in a
    few struct calls; any other header, and every malformed frame, goes through ``decode_request_header``,
    so the values and the errors (DecodeError, with the offset) are always that function's."""
    if type(frame) is bytes and len(frame) >= 14:
        size, key, version, corr, n = _CLASSIC_HEAD.unpack_from(frame, 0)
        end = 4 + size
        if 14 <= end <= len(frame) and (end == len(frame) or not strict) and 14 + n <= end:
            try:
                hv = request_header_version(key, version)
            except UnsupportedVersionError:
                hv = 1  # as decode_request_header reads an unknown api key's header
            pos = 14 + n if n > 0 else 14
            if hv == 1 or (hv == 2 and pos < end and frame[pos] == 0):  # v2: an empty tagged-field count
                client_id: Optional[str] = None
                if n >= 0:
                    try:
                        client_id = frame[14:pos].decode("utf-8")
                    except UnicodeDecodeError:
                        n = -2  # decode_request_header says where
                if n >= -1:
                    return RequestHeaderFields(key, version, corr, client_id, pos + (hv == 2), end)
    h, pos, end = decode_request_header(frame, strict=strict)
    return RequestHeaderFields(h.request_api_key, h.request_api_version, h.correlation_id, h.client_id, pos, end)


def decode_request(frame: Any, *, strict: bool = True, zero_copy: bool = False) -> tuple[Any, Any]:
    """(header, request) from a whole request frame (size prefix included). ``zero_copy``: bytes and
    records fields are memoryview slices of the frame (see ``kcodec.decode``)."""
    from .core.api import message_class

    mv, header, pos, end = _request_header(frame, strict)
    cls = message_class(header.request_api_key, "request")
    version = header.request_api_version
    done = backend.decode(program_for(cls, version), mv, pos, end, zero_copy)  # indexed: see _api.decode
    return header, finish(done[0], done[1], end, strict, cls.__name__, version)


class ResponseHeaderFields(NamedTuple):
    """A response header's correlation id, the offset where the body starts and the frame's end
    (``peek_response_header``)."""
    correlation_id: int
    body_offset: int
    end: int


def _response_header(frame: Any, header_version: int, strict: bool) -> tuple[memoryview, Any, int, int]:
    mv, end = _frame_bounds(frame, strict)
    header, pos = backend.decode(program_for(_messages().ResponseHeader, header_version), mv, 4, end)
    return mv, header, pos, end


def peek_response_header(frame: Any, api_key: int, api_version: int, *, strict: bool = True) -> ResponseHeaderFields:
    """A response frame's header as ``decode_response`` reads it (by the request's api key and version),
    without a ResponseHeader object: its correlation id, where the body starts (for ``decode_from``) and
    the frame's end. Headers with tagged fields, other buffers than bytes and every malformed frame go
    through ``decode_response``'s own header decode, so the values and the errors are always its."""
    _check_version(api_version)
    hv = response_header_version(api_key, api_version)
    if type(frame) is bytes and len(frame) >= 8:
        size, corr = _SIZE_CORR.unpack_from(frame, 0)
        end = 4 + size
        if 8 <= end <= len(frame) and (end == len(frame) or not strict):
            if hv == 0:
                return ResponseHeaderFields(corr, 8, end)
            if end > 8 and frame[8] == 0:  # v1: an empty tagged-field count
                return ResponseHeaderFields(corr, 9, end)
    _, h, pos, end = _response_header(frame, hv, strict)
    return ResponseHeaderFields(h.correlation_id, pos, end)


def decode_response(frame: Any, api_key: int, api_version: int, *, strict: bool = True,
                    zero_copy: bool = False) -> tuple[Any, Any]:
    """(header, response) from a whole response frame, given the request's api key and version.
    ``zero_copy``: bytes and records fields are memoryview slices of the frame (see ``kcodec.decode``).

    An ApiVersions response that does not decode at the requested version is read as v0, as Kafka's
    client does: that is how a broker says UNSUPPORTED_VERSION to a version it lacks.
    """
    from .core.api import message_class

    cls = message_class(api_key, "response")
    _check_version(api_version)
    mv, header, pos, end = _response_header(frame, response_header_version(api_key, api_version), strict)
    try:
        done = backend.decode(program_for(cls, api_version), mv, pos, end, zero_copy)  # see _api.decode
        return header, finish(done[0], done[1], end, strict, cls.__name__, api_version)
    except DecodeError:
        if api_key != API_VERSIONS_KEY or api_version == 0:
            raise
        # A broker that lacks the client's ApiVersions version answers in the v0 layout (error 35 and
        # its own range); Kafka's client parses that as v0, and so do we.
        try:
            msg, body_end = backend.decode(program_for(cls, 0), mv, pos, end, zero_copy)
            return header, finish(msg, body_end, end, True, cls.__name__, 0)
        except DecodeError:
            pass
        raise


class FrameSplitter:
    """Cuts a byte stream that arrives in chunks into whole frames (each with its size prefix).

    A size prefix that is negative or larger than ``max_frame_size`` raises DecodeError before
    anything is buffered for it, so a hostile peer cannot make it allocate. Frames completed before
    a bad prefix are returned first; the call after them raises.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._consumed = 0  # bytes of the stream already returned as frames

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        return len(self._buf)

    def feed(self, chunk: Any) -> list[bytes]:
        """Add bytes; return every frame they complete, in order (a non-contiguous chunk is copied)."""
        try:
            self._buf += chunk
        except TypeError:  # (bytearray takes only contiguous buffers: copied, as decode does)
            self._buf += flat_view(chunk)
        frames: list[bytes] = []
        buf = self._buf
        start = 0
        while len(buf) - start >= 4:
            size = _SIZE.unpack_from(buf, start)[0]
            if size < 0 or size > self.max_frame_size:
                if frames:  # hand over the good frames first; the next feed raises
                    break
                offset = self._consumed + start
                raise DecodeError(f"frame size {size} is outside 0..{self.max_frame_size}", offset)
            if len(buf) - start < 4 + size:
                break
            frames.append(bytes(buf[start:start + 4 + size]))
            start += 4 + size
        if start:
            del buf[:start]
            self._consumed += start
        return frames
