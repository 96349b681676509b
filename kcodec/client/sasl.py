"""SASL on a client connection: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Kafka's framing: SaslHandshake names the mechanism; with handshake v1 each SASL message travels in a
SaslAuthenticate request (KIP-152), with v0 (Kafka before 1.0) as a bare size-prefixed token that the
broker answers the same way. The mechanisms' own computations live in kcodec.security.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Protocol, Union

from kcodec.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from kcodec.security import SaslError, oauthbearer
from kcodec.security.scram import ScramClient

from .errors import AuthenticationError, KafkaConnectionError, error_of

if TYPE_CHECKING:
    from .connection import Connection

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
TokenSource = Union[str, Callable[[], str]]


@dataclass(frozen=True)
class Sasl:
    """How a client authenticates.

    mechanism: one of MECHANISMS. PLAIN and SCRAM need user and password. OAUTHBEARER sends ``token``
    (a string, or a function called for each connection); without one, an unsecured JWS whose ``sub``
    is ``user`` (Kafka's unsecured login, for test brokers), valid for ``token_lifetime`` seconds.
    """

    mechanism: str = "PLAIN"
    user: Optional[str] = None
    password: Optional[str] = None
    token: Optional[TokenSource] = None
    token_lifetime: float = 3600.0

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"unknown SASL mechanism {self.mechanism!r}; kcodec speaks {', '.join(MECHANISMS)}")
        if self.mechanism == "OAUTHBEARER":
            if self.token is None and self.user is None:
                raise ValueError("OAUTHBEARER needs a token or a user (for an unsecured token)")
        elif self.user is None or self.password is None:
            raise ValueError(f"SASL {self.mechanism} needs both a user and a password")

    @property
    def who(self) -> str:
        return f"SASL {self.mechanism}" + (f" as {self.user!r}" if self.user is not None else "")

    def exchange(self) -> _Exchange:
        if self.mechanism == "PLAIN":
            return _Plain(self)
        if self.mechanism == "OAUTHBEARER":
            return _OAuthBearer(self)
        assert self.user is not None and self.password is not None
        return _Scram(ScramClient(self.mechanism, self.user, self.password))


class _Exchange(Protocol):
    """start() gives the first client message; step(server message) the next one, or None: done."""

    def start(self) -> bytes: ...

    def step(self, challenge: bytes) -> Optional[bytes]: ...


class _Plain:
    def __init__(self, sasl: Sasl) -> None:
        self.sasl = sasl

    def start(self) -> bytes:
        return b"\0" + str(self.sasl.user).encode() + b"\0" + str(self.sasl.password).encode()

    def step(self, challenge: bytes) -> Optional[bytes]:
        return None


class _Scram:
    def __init__(self, client: ScramClient) -> None:
        self.client = client
        self.answered = False

    def start(self) -> bytes:
        return self.client.first()

    def step(self, challenge: bytes) -> Optional[bytes]:
        if not self.answered:
            self.answered = True
            return self.client.final(challenge)
        self.client.verify(challenge)
        return None


class _OAuthBearer:
    def __init__(self, sasl: Sasl) -> None:
        self.sasl = sasl
        self.refused: Optional[bytes] = None

    def start(self) -> bytes:
        token = self.sasl.token
        if token is None:
            value = oauthbearer.unsecured_token(str(self.sasl.user), lifetime=self.sasl.token_lifetime)
        else:
            value = token() if callable(token) else token
        return oauthbearer.client_message(value)

    def step(self, challenge: bytes) -> Optional[bytes]:
        if not challenge or self.refused is not None:
            if self.refused is not None:  # the broker did not fail after our abort: still a refusal
                raise SaslError(f"OAUTHBEARER token refused: {self.refused.decode(errors='replace')}", "token")
            return None
        self.refused = bytes(challenge)  # RFC 7628: an error JSON; answer 0x01, the broker then fails
        return oauthbearer.CLIENT_ABORT


async def authenticate(conn: Connection, sasl: Sasl) -> Optional[int]:
    """Run the exchange on ``conn``; the session lifetime in ms the broker granted (KIP-368), if any.
    Raises AuthenticationError with ``reason``: "mechanism", "credentials", "server-signature", ..."""
    where = f"{sasl.who} at {conn.address}"
    try:
        hs_version = conn.versions.pick(SaslHandshakeRequest)
        auth_version = conn.versions.pick(SaslAuthenticateRequest)
        if hs_version is None:
            raise AuthenticationError(f"{where}: the broker does not offer SASL (no SaslHandshake)", "mechanism")
        hs = await conn.request(SaslHandshakeRequest(mechanism=sasl.mechanism), hs_version)
        if hs.error_code:
            raise AuthenticationError(f"{where}: {sasl.mechanism} refused ({error_of(hs.error_code).name}); "
                                      f"enabled: {', '.join(hs.mechanisms) or 'none'}", "mechanism")
        raw = hs_version == 0 or auth_version is None  # Kafka < 1.0: bare tokens after the handshake
        exchange = sasl.exchange()
        message: Optional[bytes] = exchange.start()
        lifetime = None
        while message is not None:
            if raw:
                challenge = await conn.raw_exchange(message)
            else:
                resp = await conn.request(SaslAuthenticateRequest(auth_bytes=message), auth_version)
                if resp.error_code:
                    text = f": {resp.error_message}" if resp.error_message else ""
                    raise AuthenticationError(f"{where}: {error_of(resp.error_code).name}{text}", "credentials")
                challenge = resp.auth_bytes
                lifetime = getattr(resp, "session_lifetime_ms", 0) or None
            message = exchange.step(challenge)
        return lifetime
    except SaslError as e:
        raise AuthenticationError(f"{where}: {e}", e.reason) from None
    except KafkaConnectionError as e:  # brokers often just hang up on bad credentials (always with v0)
        raise AuthenticationError(f"{sasl.who}: {e}", "credentials") from None


class Reauthentication:
    """KIP-368 on the client: before the first request past 85-95 % of the session lifetime the broker
    granted (a random point, as Kafka's Java client picks), authenticate again on the same connection.
    Requests wait while that runs; the exchange's own requests pass."""

    def __init__(self, conn: Connection, sasl: Sasl, lifetime_ms: int) -> None:
        self.conn, self.sasl = conn, sasl
        self.count = 0
        self._lock = asyncio.Lock()
        self._owner: Optional[asyncio.Task[object]] = None
        self._due = self._schedule(lifetime_ms)

    @staticmethod
    def _schedule(lifetime_ms: Optional[int]) -> float:
        if not lifetime_ms:
            return float("inf")
        return time.monotonic() + lifetime_ms / 1000 * random.uniform(0.85, 0.95)

    async def before_request(self) -> None:
        if asyncio.current_task() is self._owner or (not self._lock.locked() and time.monotonic() < self._due):
            return
        async with self._lock:
            if time.monotonic() < self._due:
                return  # another request re-authenticated meanwhile
            self._owner = asyncio.current_task()
            try:
                lifetime = await authenticate(self.conn, self.sasl)
            finally:
                self._owner = None
            self.count += 1
            self.conn.session_lifetime_ms = lifetime
            self._due = self._schedule(lifetime)
