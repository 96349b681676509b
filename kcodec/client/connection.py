"""One connection to one broker: TLS, ApiVersions negotiation, SASL, correlated and pipelined requests.

Any number of requests may be in flight at once: each is written as soon as it is made and waits on
its own future; a single reader task hands each response to the request with its correlation id.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
from collections import Counter
from typing import Any, Optional, Union

import kcodec
from kcodec.errors import ErrorCode
from kcodec.messages import ApiVersionsRequest

from . import wire
from .errors import BrokerError, ClientError, KafkaConnectionError, ProtocolError, RequestTimeoutError
from .failure import describe_failure
from .sasl import Reauthentication, Sasl, authenticate
from .versions import Versions

log = logging.getLogger("kcodec.client")

API_VERSIONS_KEY = 18
MAX_FRAME = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")
_ABANDONED_KEEP = 1024  # correlation ids of timed-out requests remembered, to drop their late answers


def response_class(cls: Any) -> Any:
    return getattr(kcodec.messages, cls.__name__[: -len("Request")] + "Response")


class Connection:
    """A connection to ``host:port``. Use ``await Connection.open(...)``; then ``await request(...)``."""

    def __init__(self, host: str, port: int, *, client_id: Optional[str] = "kcodec",
                 request_timeout: float = 30.0, max_frame_size: int = MAX_FRAME) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.versions = Versions({})
        self.sent: Counter[tuple[str, int]] = Counter()  # (api, version) -> requests sent
        self.trailing_bytes = 0  # bytes brokers sent after response bodies (tolerated)
        self._splitter = kcodec.FrameSplitter(max_frame_size)
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._task: Optional[asyncio.Task[None]] = None
        self._pending: dict[int, tuple[asyncio.Future[Any], Any, int, str]] = {}
        self._abandoned: dict[int, None] = {}
        self._next_id = 1
        self._closed: Optional[ClientError] = None
        self._raw: Optional[asyncio.Future[bytes]] = None  # the bare SASL answer awaited (handshake v0)
        self.tls = False
        self._answered = False  # any frame received yet
        self.session_lifetime_ms: Optional[int] = None  # KIP-368: what SaslAuthenticate v1+ granted
        self.reauth: Optional[Reauthentication] = None  # re-authenticates before the session ends

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @classmethod
    async def open(cls, host: str, port: int, *, connect_timeout: float = 10.0,
                   sasl: Union[Sasl, tuple[str, str], None] = None, max_versions: Optional[dict[int, int]] = None,
                   tls: Optional[ssl.SSLContext] = None, **kwargs: Any) -> Connection:
        """Connect (over TLS when ``tls`` is given: the context checks the certificate and, by
        default, that it names ``host``), negotiate versions, authenticate.
        Raises KafkaConnectionError, AuthenticationError."""
        conn = cls(host, port, **kwargs)
        try:
            conn._reader, conn._writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None),
                connect_timeout)
        except asyncio.TimeoutError:
            raise KafkaConnectionError(f"{conn.address}: no connection within {connect_timeout}s") from None
        except OSError as e:  # ssl.SSLError and ConnectionError among them
            raise KafkaConnectionError(describe_failure(conn.address, e, tls=tls is not None, handshake=True)) from None
        conn.tls = tls is not None
        conn._task = asyncio.get_running_loop().create_task(conn._read_loop())
        try:
            await conn._negotiate(max_versions or {})
            if sasl is not None:
                sasl = Sasl("PLAIN", *sasl) if isinstance(sasl, tuple) else sasl
                conn.session_lifetime_ms = await authenticate(conn, sasl)
                if conn.session_lifetime_ms:
                    conn.reauth = Reauthentication(conn, sasl, conn.session_lifetime_ms)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _negotiate(self, caps: dict[int, int]) -> None:
        ours = min(ApiVersionsRequest.VALID_VERSIONS[1], caps.get(API_VERSIONS_KEY, 99))
        version, tried = ours, set()
        while version not in tried:
            tried.add(version)
            req = ApiVersionsRequest()
            if version >= 3:  # KIP-511: who we are, for the broker's metrics
                req.client_software_name, req.client_software_version = "kcodec", kcodec.__version__
            resp = await self.request(req, version)
            theirs = {a.api_key: a.max_version for a in resp.api_keys}.get(API_VERSIONS_KEY)
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
                # The broker answered in the v0 layout, with its own ApiVersions range if it could:
                # retry at its highest, else at v0 (as Kafka's client does).
                version = min(ours, theirs) if theirs is not None and theirs < version else 0
                continue
            if resp.error_code:
                raise BrokerError("ApiVersions", resp.error_code)
            if theirs is not None and version < min(ours, theirs) and min(ours, theirs) not in tried:
                version = min(ours, theirs)  # a v0 fallback revealed a better common version: use it
                continue
            self.versions = Versions({a.api_key: (a.min_version, a.max_version) for a in resp.api_keys},
                                     caps, version)
            return
        raise ProtocolError(f"{self.address}: ApiVersions v{version} refused as UNSUPPORTED_VERSION")

    async def raw_exchange(self, token: bytes, timeout: Optional[float] = None) -> bytes:
        """After a SaslHandshake v0: send a bare size-prefixed SASL token, return the broker's bare answer."""
        if self._closed is not None:
            raise self._closed
        assert self._writer is not None
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._raw = fut
        wait = self.request_timeout if timeout is None else timeout
        try:
            self._writer.write(_SIZE.pack(len(token)) + token)
            return await asyncio.wait_for(asyncio.shield(fut), wait)
        except asyncio.TimeoutError:
            raise RequestTimeoutError(f"SASL token to {self.address}: no answer within {wait}s") from None
        finally:
            self._raw = None

    async def request(self, req: Any, version: Optional[int] = None, *, api_key: Optional[int] = None,
                      timeout: Optional[float] = None) -> Any:
        """Send ``req`` and return its response. ``version``: the negotiated one when omitted;
        ``api_key``: the class's own when omitted (ListTopics may live elsewhere)."""
        cls = type(req)
        key = cls.API_KEY if api_key is None else api_key
        if version is None:
            version = self.versions.require(cls, key)
        if self.reauth is not None:
            await self.reauth.before_request()
        if self._closed is not None:
            raise self._closed
        assert self._writer is not None
        corr = self._next_id
        self._next_id = corr + 1 if corr < 0x7FFFFFFF else 1
        name = cls.__name__[: -len("Request")]
        frame = wire.encode_request(req, key, version, corr, self.client_id)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[corr] = (fut, response_class(cls), version, name)
        self.sent[(name, version)] += 1
        wait = self.request_timeout if timeout is None else timeout
        try:
            self._writer.write(frame)
            if wait:  # shielded: a timeout must not cancel the future the reader will complete
                return await asyncio.wait_for(asyncio.shield(fut), wait)
            return await fut
        except asyncio.TimeoutError:
            raise RequestTimeoutError(f"{name} v{version} to {self.address}: no response within {wait}s "
                                      f"(correlation id {corr})") from None
        finally:
            if self._pending.pop(corr, None) is not None:  # timed out or cancelled: drop its answer
                self._abandoned[corr] = None
                if len(self._abandoned) > _ABANDONED_KEEP:
                    del self._abandoned[next(iter(self._abandoned))]

    async def _read_loop(self) -> None:
        assert self._reader is not None
        try:
            while True:
                data = await self._reader.read(65536)
                if not data:
                    self._fail(KafkaConnectionError(self._describe_failure(None)))
                    return
                for frame in self._splitter.feed(data):
                    self._dispatch(frame)
        except kcodec.DecodeError as e:
            self._fail(ProtocolError(f"{self.address} sent a bad frame: {e}"))
        except ProtocolError as e:
            self._fail(e)
        except OSError as e:  # ssl.SSLError among them
            self._fail(KafkaConnectionError(self._describe_failure(e)))
        except asyncio.CancelledError:
            pass

    def _describe_failure(self, error: Optional[OSError]) -> str:
        return describe_failure(self.address, error, tls=self.tls, answered=self._answered)

    def _dispatch(self, frame: bytes) -> None:
        if self._raw is not None:  # a bare SASL token (handshake v0) has no header to correlate
            if not self._raw.done():
                self._raw.set_result(bytes(frame[4:]))
            return
        self._answered = True
        corr = wire.correlation_id_of(frame)
        entry = self._pending.pop(corr, None)
        if entry is None:
            if corr in self._abandoned:
                del self._abandoned[corr]
                log.debug("%s: dropped the late answer to correlation id %d", self.address, corr)
                return
            raise ProtocolError(f"{self.address} answered correlation id {corr}, which no request has")
        fut, cls, version, name = entry
        try:
            msg, trailing = wire.decode_response(frame, cls, version)
        except kcodec.KcodecError as e:  # this answer is bad; the frames around it are still whole
            if not fut.done():
                fut.set_exception(ProtocolError(f"{name} v{version} response from {self.address}: {e}"))
            return
        if trailing:
            self.trailing_bytes += trailing
            log.debug("%s: %d bytes after the %s v%d response", self.address, trailing, name, version)
        if not fut.done():
            fut.set_result(msg)

    def _fail(self, exc: ClientError) -> None:
        if self._closed is None:
            self._closed = exc
        for fut, *_ in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()
        if self._raw is not None and not self._raw.done():
            self._raw.set_exception(exc)
        if self._writer is not None:
            self._writer.close()

    async def close(self) -> None:
        self._fail(KafkaConnectionError(f"connection to {self.address} closed by the client"))
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._writer is not None:
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
