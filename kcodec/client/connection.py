"""One connection to one broker: ApiVersions negotiation, SASL PLAIN, correlated and pipelined requests.

Any number of requests may be in flight at once: each is written as soon as it is made and waits on
its own future; a single reader task hands each response to the request with its correlation id.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any, Optional

import kcodec
from kcodec.errors import ErrorCode
from kcodec.messages import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest

from . import wire
from .errors import (AuthenticationError, BrokerError, ClientError, KafkaConnectionError, ProtocolError,
                     RequestTimeoutError, error_of)
from .versions import Versions

log = logging.getLogger("kcodec.client")

API_VERSIONS_KEY = 18
MAX_FRAME = 100 * 1024 * 1024
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

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @classmethod
    async def open(cls, host: str, port: int, *, connect_timeout: float = 10.0,
                   sasl: Optional[tuple[str, str]] = None, max_versions: Optional[dict[int, int]] = None,
                   **kwargs: Any) -> Connection:
        """Connect, negotiate versions, authenticate. Raises KafkaConnectionError, AuthenticationError."""
        conn = cls(host, port, **kwargs)
        try:
            conn._reader, conn._writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                                connect_timeout)
        except asyncio.TimeoutError:
            raise KafkaConnectionError(f"{conn.address}: no connection within {connect_timeout}s") from None
        except OSError as e:
            raise KafkaConnectionError(f"{conn.address}: {e.strerror or e}") from None
        conn._task = asyncio.get_running_loop().create_task(conn._read_loop())
        try:
            await conn._negotiate(max_versions or {})
            if sasl is not None:
                await conn._authenticate(*sasl)
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

    async def _authenticate(self, user: str, password: str) -> None:
        try:
            hs_version = self.versions.pick(SaslHandshakeRequest)
            auth_version = self.versions.pick(SaslAuthenticateRequest)
            if hs_version is None:
                raise AuthenticationError(f"{self.address} does not offer SASL (no SaslHandshake)")
            if hs_version < 1 or auth_version is None:
                raise AuthenticationError(f"{self.address} only speaks SASL handshake v0 (raw tokens, "
                                          "Kafka before 1.0), which this client does not")
            hs = await self.request(SaslHandshakeRequest(mechanism="PLAIN"), hs_version)
            if hs.error_code:
                raise AuthenticationError(f"{self.address}: SASL PLAIN refused "
                                          f"({_name(hs.error_code)}); enabled: {', '.join(hs.mechanisms) or 'none'}")
            token = b"\0" + user.encode() + b"\0" + password.encode()
            auth = await self.request(SaslAuthenticateRequest(auth_bytes=token), auth_version)
            if auth.error_code:
                raise AuthenticationError(f"{self.address}: {_name(auth.error_code)}"
                                          + (f": {auth.error_message}" if auth.error_message else ""))
        except KafkaConnectionError as e:  # brokers often just hang up on bad credentials
            raise AuthenticationError(f"SASL PLAIN as {user!r}: {e}") from None

    async def request(self, req: Any, version: Optional[int] = None, *, api_key: Optional[int] = None,
                      timeout: Optional[float] = None) -> Any:
        """Send ``req`` and return its response. ``version``: the negotiated one when omitted;
        ``api_key``: the class's own when omitted (ListTopics may live elsewhere)."""
        cls = type(req)
        key = cls.API_KEY if api_key is None else api_key
        if version is None:
            version = self.versions.require(cls, key)
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
                    self._fail(KafkaConnectionError(f"{self.address} closed the connection"))
                    return
                for frame in self._splitter.feed(data):
                    self._dispatch(frame)
        except kcodec.DecodeError as e:
            self._fail(ProtocolError(f"{self.address} sent a bad frame: {e}"))
        except ProtocolError as e:
            self._fail(e)
        except OSError as e:
            self._fail(KafkaConnectionError(f"{self.address}: {e.strerror or e}"))
        except asyncio.CancelledError:
            pass

    def _dispatch(self, frame: bytes) -> None:
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


def _name(code: int) -> str:
    return error_of(code).name
