"""One connection to one broker: TLS, ApiVersions negotiation, SASL, correlated and pipelined requests.

The protocol is kcodec.protocol's (ClientConnection: framing, correlation, negotiation; its SASL
exchanges), run over asyncio streams by its adapter (kcodec.protocol.aio); this class adds what the admin
client wants on top: its errors (KafkaConnectionError naming the likely cause, RequestTimeoutError,
ProtocolError), the request timeout, counts of what was sent, and KIP-368 re-authentication.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import Counter
from typing import Any, Optional, TypeVar, Union

from kcodec.errors import ErrorCode
from kcodec.exceptions import KcodecError
from kcodec.framing import DEFAULT_MAX_FRAME
from kcodec.protocol import ClientConnection, Request, ResponseError, ResponseFailed, Versions
from kcodec.protocol import UnsupportedApiError as NoCommonVersion
from kcodec.protocol.aio import AsyncConnection, ConnectionClosed, from_streams
from kcodec.protocol.errors import RemoteProtocolError

from .errors import (BrokerError, ClientError, KafkaConnectionError, ProtocolError, RequestTimeoutError,
                     UnsupportedApiError)
from .failure import describe_failure
from .sasl import Reauthentication, Sasl, authenticate

log = logging.getLogger("kcodec.client")

MAX_FRAME = DEFAULT_MAX_FRAME
X = TypeVar("X")


class ClientVersions(Versions):
    """kcodec.protocol's Versions, whose missing API is the client's UnsupportedApiError."""

    def require(self, cls: Any, api_key: Optional[int] = None) -> int:
        try:
            return super().require(cls, api_key)
        except NoCommonVersion as e:
            raise UnsupportedApiError(str(e)) from None


class Connection:
    """A connection to ``host:port``. Use ``await Connection.open(...)``; then ``await request(...)``."""

    def __init__(self, host: str, port: int, *, client_id: Optional[str] = "kcodec",
                 request_timeout: float = 30.0, max_frame_size: int = MAX_FRAME) -> None:
        self.host, self.port = host, port
        self.request_timeout = request_timeout
        self.protocol = ClientConnection(client_id, max_frame_size=max_frame_size)
        self.protocol.versions = ClientVersions({})
        self.sent: Counter[tuple[str, int]] = Counter()  # (api, version) -> requests sent
        self.io: Optional[AsyncConnection] = None
        self.tls = False
        self.session_lifetime_ms: Optional[int] = None  # KIP-368: what SaslAuthenticate v1+ granted
        self.reauth: Optional[Reauthentication] = None  # re-authenticates before the session ends

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def client_id(self) -> Optional[str]:
        return self.protocol.client_id

    @property
    def versions(self) -> Versions:
        return self.protocol.versions

    @property
    def trailing_bytes(self) -> int:
        """Bytes brokers sent after response bodies (tolerated)."""
        return self.protocol.trailing_bytes

    @property
    def closed(self) -> bool:
        return self.io is None or self.io.closed

    @classmethod
    async def open(cls, host: str, port: int, *, connect_timeout: float = 10.0,
                   sasl: Union[Sasl, tuple[str, str], None] = None, max_versions: Optional[dict[int, int]] = None,
                   tls: Optional[ssl.SSLContext] = None, **kwargs: Any) -> Connection:
        """Connect (over TLS when ``tls`` is given: the context checks the certificate and, by
        default, that it names ``host``), negotiate versions, authenticate.
        Raises KafkaConnectionError, AuthenticationError."""
        conn = cls(host, port, **kwargs)
        try:
            streams = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None),
                connect_timeout)
        except asyncio.TimeoutError:
            raise KafkaConnectionError(f"{conn.address}: no connection within {connect_timeout}s") from None
        except OSError as e:  # ssl.SSLError and ConnectionError among them
            raise KafkaConnectionError(describe_failure(conn.address, e, tls=tls is not None, handshake=True)) from None
        conn.tls = tls is not None
        conn.io = from_streams(*streams, conn.protocol, on_error=conn._failure)
        try:
            conn.protocol.versions = ClientVersions({}, max_versions or {})
            await conn.run(conn.protocol.negotiation())
            if sasl is not None:
                sasl = Sasl("PLAIN", *sasl) if isinstance(sasl, tuple) else sasl
                conn.session_lifetime_ms = await authenticate(conn, sasl)
                if conn.session_lifetime_ms:
                    conn.reauth = Reauthentication(conn, sasl, conn.session_lifetime_ms)
        except BaseException:
            await conn.close()
            raise
        return conn

    def _failure(self, error: BaseException) -> ClientError:
        """What waiting requests fail with when the stream breaks."""
        if isinstance(error, KcodecError) and not isinstance(error, RemoteProtocolError):
            return ProtocolError(f"{self.address} sent a bad frame: {error}")
        if isinstance(error, RemoteProtocolError):
            return ProtocolError(f"{self.address}: {error}")
        answered = self.protocol.reader.position > 0
        cause = None if isinstance(error, ConnectionClosed) else error
        if cause is not None and not isinstance(cause, OSError):
            return ProtocolError(f"{self.address}: {type(cause).__name__}: {cause}")
        return KafkaConnectionError(describe_failure(self.address, cause, tls=self.tls, answered=answered))

    async def _roundtrip(self, outgoing: Any, timeout: Optional[float]) -> Any:
        if self.io is None:
            raise KafkaConnectionError(f"{self.address}: not connected")
        if self.io.error is not None:
            raise self.io.error
        if isinstance(outgoing, Request):
            self.sent[(outgoing.api, outgoing.version)] += 1
        wait = self.request_timeout if timeout is None else timeout
        try:
            return await self.io.roundtrip(outgoing, wait or None)
        except asyncio.TimeoutError:
            what = f"{outgoing.api} v{outgoing.version}" if isinstance(outgoing, Request) else "SASL token"
            corr = f" (correlation id {outgoing.correlation_id})" if isinstance(outgoing, Request) else ""
            raise RequestTimeoutError(f"{what} to {self.address}: no response within {wait}s{corr}") from None

    async def run(self, exchange: X, timeout: Optional[float] = None) -> X:
        """Drive a kcodec.protocol exchange (negotiation, SASL) here, with this connection's errors."""
        try:
            outgoing = exchange.start()  # type: ignore[attr-defined]
            while outgoing is not None:
                outgoing = exchange.receive(await self._roundtrip(outgoing, timeout))  # type: ignore[attr-defined]
        except ResponseError as e:
            if e.error_code == ErrorCode.UNSUPPORTED_VERSION:
                raise ProtocolError(f"{self.address}: {e}") from None
            raise BrokerError(e.api, e.error_code) from None
        except RemoteProtocolError as e:
            raise ProtocolError(f"{self.address}: {e}") from None
        return exchange

    async def request(self, req: Any, version: Optional[int] = None, *, api_key: Optional[int] = None,
                      timeout: Optional[float] = None) -> Any:
        """Send ``req`` and return its response. ``version``: the negotiated one when omitted;
        ``api_key``: the class's own when omitted (ListTopics may live elsewhere)."""
        if version is None:
            version = self.versions.require(type(req), api_key)
        if self.reauth is not None:
            await self.reauth.before_request()
        if self.io is not None and self.io.error is not None:
            raise self.io.error
        outgoing = self.protocol.send(req, version, api_key=api_key)
        event = await self._roundtrip(outgoing, timeout)
        if event is None:  # a Produce with acks=0: Kafka sends no answer
            return None
        if isinstance(event, ResponseFailed):  # this answer is bad; the frames around it are still whole
            raise ProtocolError(f"{outgoing.api} v{version} response from {self.address}: {event.error}")
        if event.trailing_bytes:
            log.debug("%s: %d bytes after the %s v%d response", self.address, event.trailing_bytes, outgoing.api,
                      version)
        return event.message

    async def close(self) -> None:
        if self.io is not None:
            self.io.fail(KafkaConnectionError(f"connection to {self.address} closed by the client"))
            await self.io.close()
