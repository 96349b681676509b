"""The client's side of one Kafka connection, with no I/O: requests out as buffers, bytes in, responses out.

    conn = ClientConnection(client_id="me", max_in_flight=5)
    negotiation = conn.negotiation()                   # ApiVersions: an exchange the caller drives
    request = negotiation.start()
    sock.sendmsg(request.buffers)
    for event in conn.receive_data(sock.recv(65536)):  # any chunking
        ...                                            # Response: event.message, event.request
    request = conn.send(MetadataRequest(topics=None))  # the negotiated version when none is given

Requests get the next correlation id (Kafka's NetworkClient counts from 0) and the header version of
Kafka's rules (``kcodec.framing``), and are remembered until answered, so that each response is decoded
as the response to its request (api key and version), whatever the order the answers come in. A response
to no request in flight is a RemoteProtocolError; a request over ``max_in_flight`` or with a correlation id
already in flight a LocalProtocolError, and nothing is sent. A Produce with acks=0 is never answered
(Kafka's rule) and is not in flight. ``abandon`` forgets a request whose answer nobody waits for any more
(a timeout): its answer is dropped when it comes (``dropped`` counts them).

After SaslHandshake v0, SASL tokens travel bare (``send_token``; the broker's answer is a TokenReceived):
the SASL exchanges of kcodec.protocol.sasl do that. Multi-step exchanges (negotiation, SASL) are objects
with ``start()`` and ``receive(event)``; kcodec.protocol.aio and .blocking run them.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Any, Mapping, Optional

import kcodec
from kcodec.buffers import Buffers
from kcodec.exceptions import DecodeError, KcodecError
from kcodec.framing import DEFAULT_MAX_FRAME, SPLICE_THRESHOLD, header_version
from kcodec.messages import ApiVersionsResponse, ResponseHeader

from .errors import DuplicateCorrelationIdError, InFlightLimitError, UnknownCorrelationIdError
from .events import ClientEvent, Request, Response, ResponseFailed, Token, TokenReceived
from .frames import FrameReader
from .versions import Negotiation, Versions

_I32 = struct.Struct(">i")
MAX_CORRELATION_ID = 0x7FFFFFFF
REMEMBERED = 1024  # answered and abandoned correlation ids kept, to tell a late or repeated answer
PRODUCE_KEY = 0


def response_class(request_class: Any) -> Any:
    """The response class of a request class (by Kafka's names: FooRequest -> FooResponse)."""
    return kcodec.message_class(name=request_class.__name__[:-len("Request")] + "Response")


class ClientConnection:
    """One connection's protocol state, client side (see the module's text).

    client_id: the header's client id. max_in_flight: requests awaiting answers at most (None: no limit).
    max_versions: api key -> the highest version to use. strict: bytes after a response body fail that
    response (else they are counted in ``trailing_bytes``, as some brokers send fields a version lacks).
    zero_copy: bytes and records values of responses are views of the bytes received, not copies.
    splice_threshold: bytes values of at least this many bytes (records always) go out as the caller's
    own buffers (``kcodec.encode_buffers``).
    """

    def __init__(self, client_id: Optional[str] = "kcodec", *, max_in_flight: Optional[int] = None,
                 max_versions: Optional[Mapping[int, int]] = None, max_frame_size: int = DEFAULT_MAX_FRAME,
                 strict: bool = False, zero_copy: bool = False,
                 splice_threshold: int = SPLICE_THRESHOLD) -> None:
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self.strict = strict
        self.zero_copy = zero_copy
        self.splice_threshold = splice_threshold
        self.versions = Versions({}, max_versions)
        self.reader = FrameReader(max_frame_size)
        self.trailing_bytes = 0  # bytes brokers sent after response bodies (tolerated unless strict)
        self.dropped = 0  # answers to abandoned requests, dropped
        self._in_flight: dict[int, Request] = {}
        self._gone: dict[int, bool] = {}  # recent ids: True abandoned (answer expected), False answered
        self._next_id = 0
        self._tokens: deque[set[int]] = deque()  # per bare SASL token awaited: the requests answered first

    # -- sending -----------------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered (abandoned ones and acks=0 Produce requests aside)."""
        return len(self._in_flight)

    @property
    def can_send(self) -> bool:
        return self.max_in_flight is None or len(self._in_flight) < self.max_in_flight

    def send(self, message: Any, version: Optional[int] = None, *, api_key: Optional[int] = None,
             correlation_id: Optional[int] = None) -> Request:
        """A request to write (its ``buffers``), remembered until answered. ``version``: the negotiated
        one when None; ``api_key``: the class's own when None (a broker may serve KIP-142's ListTopics
        under another); ``correlation_id``: the next one when None."""
        cls = type(message)
        key = cls.API_KEY if api_key is None else api_key
        if version is None:
            version = self.versions.require(cls, key)
        expects = not (cls.API_KEY == PRODUCE_KEY and getattr(message, "acks", -1) == 0)
        if expects and not self.can_send:
            raise InFlightLimitError(f"{len(self._in_flight)} requests in flight, the most this connection "
                                     f"allows (max_in_flight={self.max_in_flight})")
        if correlation_id is None:
            correlation_id = self._take_id()
        elif correlation_id in self._in_flight:
            raise DuplicateCorrelationIdError(f"correlation id {correlation_id} is in flight already "
                                              f"({self._in_flight[correlation_id].api})")
        buffers = kcodec.encode_request_buffers(message, version, correlation_id, self.client_id, api_key=key,
                                                threshold=self.splice_threshold)
        request = Request(correlation_id, key, version, message, buffers, expects)
        if expects:
            self._in_flight[correlation_id] = request
            self._gone.pop(correlation_id, None)
        return request

    def _take_id(self) -> int:
        for _ in range(len(self._in_flight) + len(self._gone) + 1):
            corr = self._next_id
            self._next_id = corr + 1 if corr < MAX_CORRELATION_ID else 0
            if corr not in self._in_flight and not self._gone.get(corr, False):
                return corr
        raise AssertionError("no free correlation id")  # more ids than requests: never

    def send_token(self, data: bytes) -> Token:
        """A bare SASL token (after SaslHandshake v0): the broker answers it with a bare token once the requests
        sent before it are answered."""
        self._tokens.append(set(self._in_flight))
        data = bytes(data)
        return Token(data, Buffers([_I32.pack(len(data)), data], 4 + len(data)))

    def negotiation(self, **kwargs: Any) -> Negotiation:
        """The ApiVersions exchange: when done, ``versions`` holds what the broker speaks."""
        return Negotiation(self, **kwargs)

    def abandon(self, correlation_id: int) -> None:
        """Stop waiting for a request's answer (it timed out): when it comes it is dropped, not an error."""
        if self._in_flight.pop(correlation_id, None) is not None:
            self._remember(correlation_id, True)

    def _remember(self, correlation_id: int, abandoned: bool) -> None:
        self._gone[correlation_id] = abandoned
        if len(self._gone) > REMEMBERED:
            del self._gone[next(iter(self._gone))]

    def close(self) -> list[Request]:
        """The connection is gone: the requests that will never be answered (forgotten here)."""
        lost = list(self._in_flight.values())
        self._in_flight.clear()
        return lost

    # -- receiving ---------------------------------------------------------------------------------------

    def receive_data(self, data: Any) -> list[ClientEvent]:
        """Bytes from the broker, in any chunking: the events they complete, in order. A bad size prefix
        is a DecodeError, an answer to no request an UnknownCorrelationIdError: the stream cannot go on."""
        return self._events(self.reader.feed(data))

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Room to receive into (``socket.recv_into``, ``asyncio.BufferedProtocol``): no copy at all."""
        return self.reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> list[ClientEvent]:
        return self._events(self.reader.buffer_updated(nbytes))

    def _events(self, frames: list[memoryview]) -> list[ClientEvent]:
        return [event for event in map(self._event, frames) if event is not None]

    def _event(self, frame: memoryview) -> Optional[ClientEvent]:
        if self._tokens and not self._tokens[0] & self._in_flight.keys():
            self._tokens.popleft()
            return TokenReceived(bytes(frame[4:]))
        if len(frame) < 8:
            raise DecodeError(f"response frame of {len(frame)} bytes has no correlation id", 0)
        corr = _I32.unpack_from(frame, 4)[0]
        request = self._in_flight.pop(corr, None)
        if request is None:
            gone = self._gone.pop(corr, None)
            if gone:
                self.dropped += 1
                return None
            said = "answered already" if gone is False else "which no request has"
            raise UnknownCorrelationIdError(f"the broker answered correlation id {corr}, {said}", corr)
        self._remember(corr, False)
        try:
            header, message, trailing = self._decode(frame, request)
        except KcodecError as e:  # this answer is bad; the frames around it are still whole
            return ResponseFailed(request, e, frame)
        self.trailing_bytes += trailing
        return Response(request, header, message, trailing)

    def _decode(self, frame: memoryview, request: Request) -> tuple[Any, Any, int]:
        cls = response_class(type(request.message))
        version = request.version
        if cls is ApiVersionsResponse:
            return api_versions_response(frame, version)
        header, pos = kcodec.decode_from(ResponseHeader, frame, header_version(cls, version), 4)
        message, end = kcodec.decode_from(cls, frame, version, pos, zero_copy=self.zero_copy)
        if end != len(frame) and self.strict:
            raise DecodeError(f"{len(frame) - end} trailing bytes after the body", end, "", cls.__name__, version)
        return header, message, len(frame) - end


def api_versions_response(frame: memoryview, version: int) -> tuple[Any, Any, int]:
    """An ApiVersions response (header v0 always), read as Kafka's clients read it: a broker that lacks
    the version asked answers UNSUPPORTED_VERSION in the v0 layout. Read strictly at the version asked,
    then at v0 (tolerantly too when the body starts with error 35), then tolerantly at the version asked,
    whose error is the one reported."""
    header, pos = kcodec.decode_from(ResponseHeader, frame, 0, 4)
    tries = [(version, True)]
    if version:
        tries.append((0, True))
        if bytes(frame[pos:pos + 2]) == b"\x00\x23":
            tries.append((0, False))
    tries.append((version, False))
    error: Optional[DecodeError] = None
    for v, strict in tries:
        try:
            message, end = kcodec.decode_from(ApiVersionsResponse, frame, v, pos)
        except DecodeError as e:
            error = e
            continue
        if end == len(frame) or not strict:
            return header, message, len(frame) - end
        error = DecodeError(f"{len(frame) - end} trailing bytes after the body", end, "", "ApiVersionsResponse", v)
    assert error is not None
    raise error
