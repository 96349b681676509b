"""What the connections hand out: requests and tokens to write, and events from the bytes received.

Outgoing (the caller writes ``buffers`` to the socket, in order, whole):
    Request        a request frame (correlation id, api key, version, the message), or a response frame a
                   server built (``Response`` events are the client's side of the same thing)
    Token          a bare SASL token (after SaslHandshake v0), with no Kafka header

Client events (ClientConnection.receive_data):
    Response       a response, decoded, with the request it answers
    ResponseFailed a whole response frame whose body did not decode: that request failed, the
                   connection goes on
    TokenReceived  a bare SASL token from the broker (handshake v0)

Server events (ServerConnection.receive_data):
    RequestReceived  a request, decoded (its frame a view of the bytes received)
    RequestFailed    a request whose header was read but whose body was not (an unknown api or version,
                     bad bytes): the server decides, as Kafka does, to answer or to close
    TokenReceived    a bare SASL token from the client (after SaslHandshake v0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from kcodec.buffers import Buffers
from kcodec.exceptions import KcodecError


@dataclass(eq=False)
class Request:
    """A request built for sending: write ``buffers``; ``expects_response`` is False only for a Produce
    with acks=0, which Kafka never answers."""

    correlation_id: int
    api_key: int
    version: int
    message: Any
    buffers: Buffers = field(repr=False)
    expects_response: bool = True

    @property
    def api(self) -> str:
        """The API's name (Kafka's, from the message class): "Metadata", "Produce"..."""
        return type(self.message).__name__[:-len("Request")]


@dataclass(eq=False)
class Token:
    """A bare SASL token to write (size prefix and bytes, no header): the broker answers with one."""

    data: bytes
    buffers: Buffers = field(repr=False)


@dataclass(eq=False)
class Response:
    """The answer to ``request``: its header and decoded message. ``trailing_bytes``: bytes the peer sent
    after the body (tolerated when the connection is not strict: some brokers add fields a version lacks)."""

    request: Request
    header: Any
    message: Any
    trailing_bytes: int = 0

    @property
    def correlation_id(self) -> int:
        return self.request.correlation_id

    @property
    def api_key(self) -> int:
        return self.request.api_key

    @property
    def version(self) -> int:
        return self.request.version


@dataclass(eq=False)
class ResponseFailed:
    """A whole response frame for ``request`` whose body did not decode (``error`` says where); the frames
    around it are whole, so the connection goes on."""

    request: Request
    error: KcodecError
    frame: memoryview = field(repr=False)

    @property
    def correlation_id(self) -> int:
        return self.request.correlation_id


@dataclass(eq=False)
class TokenReceived:
    """A bare SASL token (handshake v0): its bytes, without the size prefix."""

    data: bytes


class _FromHeader:
    """A request's facts, read from its header."""

    header: Any

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)

    @property
    def api_key(self) -> int:
        return int(self.header.request_api_key)

    @property
    def version(self) -> int:
        return int(self.header.request_api_version)


@dataclass(eq=False)
class RequestReceived(_FromHeader):
    """A request: header, message, and its frame (a view of the bytes received, size prefix included;
    with zero-copy, records and bytes values are views of it too). Answer with ServerConnection.respond
    unless ``expects_response`` is False (a Produce with acks=0)."""

    header: Any
    message: Any
    frame: memoryview = field(repr=False)
    expects_response: bool = True


@dataclass(eq=False)
class RequestFailed(_FromHeader):
    """A request frame whose header was read and whose body was not: ``error`` is a
    ``kcodec.UnsupportedVersionError`` (an api key or version kcodec does not know) or a
    ``kcodec.DecodeError``. Kafka answers an ApiVersions request of a version it lacks with
    UNSUPPORTED_VERSION (v0 layout) and closes the connection for anything else. Until the server
    responds or calls ``skip``, later responses wait (the order is kept)."""

    header: Any
    error: KcodecError
    frame: memoryview = field(repr=False)


ClientEvent = Union[Response, ResponseFailed, TokenReceived]
ServerEvent = Union[RequestReceived, RequestFailed, TokenReceived]
Outgoing = Union[Request, Token]



def response_of(request: Request, event: Any) -> Response:
    """What a round trip of ``request`` returns: its Response; a ResponseFailed raises its error, and a
    Produce with acks=0 (no answer: ``event`` None) gives a Response with no header and no message."""
    if event is None:
        return Response(request, None, None)
    if isinstance(event, ResponseFailed):
        raise event.error
    assert isinstance(event, Response)
    return event
