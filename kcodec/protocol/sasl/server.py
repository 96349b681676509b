"""Kafka's SASL framing on a server connection, with no I/O: SaslHandshake and SaslAuthenticate requests in,
their responses out, bare tokens after handshake v0, and KIP-368's session lifetime.

    sasl = SaslServer({"PLAIN": lambda: PlainServer(check), "SCRAM-SHA-256": lambda: ScramServerMechanism(...)})
    sasl.allows(api_key)                     # before authentication only ApiVersions and SASL pass
    resp = sasl.handshake(request, version)  # SaslHandshakeResponse; sasl.raw_tokens after a v0 one
    resp = sasl.authenticate(request, version)
    reply = sasl.token(data)                 # handshake v0: the bare answer, None when it failed

A failed exchange's response carries Kafka's error and ``close_after_response`` is set: Kafka closes the
connection once the client has read it. SaslAuthenticate v1+ tells the client its session's lifetime
(``reauth_ms``, or less when its OAUTHBEARER token ends sooner); it may re-authenticate on the same
connection with the same mechanism and principal (KIP-368), and past its end only SASL requests pass.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (ApiVersionsRequest, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                             SaslHandshakeResponse)

from ..errors import SaslError
from .mechanisms import ServerMechanism

SASL_KEYS = frozenset({SaslHandshakeRequest.API_KEY, SaslAuthenticateRequest.API_KEY})
BEFORE_AUTHENTICATION = SASL_KEYS | {ApiVersionsRequest.API_KEY}


def kafka_principal(user: str) -> str:
    return f"User:{user}"


class SaslServer:
    """One connection's SASL state, server side (see the module's text)."""

    def __init__(self, mechanisms: Mapping[str, Callable[[], ServerMechanism]], *, reauth_ms: Optional[int] = None,
                 principal_of: Callable[[str], str] = kafka_principal, clock: Callable[[], float] = time.time) -> None:
        self.mechanisms = dict(mechanisms)
        self.reauth_ms = reauth_ms
        self.principal_of = principal_of
        self.clock = clock
        self.mechanism: Optional[str] = None
        self.principal: Optional[str] = None
        self.authenticated = False
        self.expires_at: Optional[float] = None  # seconds since the epoch, when the session ends
        self.raw_tokens = False  # after SaslHandshake v0: bare tokens until the exchange ends
        self.close_after_response = False  # a failure: close once the client has the answer
        self.failure: Optional[SaslError] = None  # why a bare-token exchange failed (handshake v0)
        self._exchange: Optional[ServerMechanism] = None
        self._reauth = False  # authenticated with SaslAuthenticate v1+: may re-authenticate

    @property
    def enabled(self) -> list[str]:
        return list(self.mechanisms)

    @property
    def in_exchange(self) -> bool:
        return self._exchange is not None

    def expired(self) -> bool:
        return self.expires_at is not None and self.clock() > self.expires_at

    def allows(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be served now: before authentication and during a
        re-authentication exchange only ApiVersions and SASL (Kafka's IllegalSaslStateException); after
        the session's end only SASL (re-authentication). Kafka closes the connection otherwise."""
        if not self.authenticated or self._exchange is not None:
            return api_key in BEFORE_AUTHENTICATION
        return api_key in SASL_KEYS or not self.expired()

    def refusal(self, api_key: int) -> Optional[str]:
        """Why a request of ``api_key`` may not be served now (for the server's log), or None if it may."""
        if self.allows(api_key):
            return None
        if not self.authenticated:
            unfinished = f" ended (SASL {self.mechanism} exchange unfinished)" if self._exchange is not None else ""
            return f"request before SASL authentication{unfinished}"
        if self._exchange is not None:
            return f"request during a SASL {self.mechanism} re-authentication exchange"
        return "request after the SASL session expired without re-authentication (KIP-368)"

    def handshake(self, req: SaslHandshakeRequest, version: int) -> SaslHandshakeResponse:
        mechanisms = self.enabled
        reauth = self.authenticated and self._reauth and version >= 1
        if (self.authenticated and not reauth) or self._exchange is not None:
            return self._refuse_handshake(ErrorCode.ILLEGAL_SASL_STATE)
        if req.mechanism not in self.mechanisms:
            return self._refuse_handshake(ErrorCode.UNSUPPORTED_SASL_MECHANISM)
        if reauth and req.mechanism != self.mechanism:  # KIP-368: the same mechanism, or the connection ends
            return self._refuse_handshake(ErrorCode.ILLEGAL_SASL_STATE)
        self.mechanism = req.mechanism
        self._exchange = self.mechanisms[req.mechanism]()
        self.raw_tokens = version == 0
        return SaslHandshakeResponse(mechanisms=mechanisms)

    def _refuse_handshake(self, error: ErrorCode) -> SaslHandshakeResponse:
        self.close_after_response = True
        return SaslHandshakeResponse(error_code=error, mechanisms=self.enabled)

    def authenticate(self, req: SaslAuthenticateRequest, version: int) -> SaslAuthenticateResponse:
        if self._exchange is None or self.raw_tokens:
            self.close_after_response = True
            return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                            error_message="SaslAuthenticate needs a SaslHandshake v1 first")
        try:
            reply, done = self._exchange.step(bytes(req.auth_bytes))  # a memoryview when decoded zero-copy
            lifetime_ms = self._finish(reauth=version >= 1) if done else 0
        except SaslError as e:
            self.close_after_response = True
            self._exchange = None
            return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=(
                str(e) if e.reason == "error-challenge" else failure_message(self.mechanism, e)))
        resp = SaslAuthenticateResponse(error_message=None, auth_bytes=reply)
        if version >= 1:
            resp.session_lifetime_ms = lifetime_ms
        return resp

    def token(self, data: bytes) -> Optional[bytes]:
        """After SaslHandshake v0: the bare answer to a bare client token; None when authentication failed
        (with v0 the only way to say so is to close the connection). ``failure`` says why."""
        if self._exchange is None:
            self.failure = SaslError("a bare SASL token without a SaslHandshake v0", "state")
            return None
        try:
            reply, done = self._exchange.step(data)
            if done:
                self._finish(reauth=False)
        except SaslError as e:
            self.failure = e
            self._exchange = None
            return None
        return reply

    def _finish(self, *, reauth: bool) -> int:
        """The exchange succeeded: the principal and the session's end; its lifetime in ms (0: none)."""
        assert self._exchange is not None and self._exchange.user is not None
        principal = self.principal_of(self._exchange.user)
        if self.authenticated and principal != self.principal:
            raise SaslError(f"Cannot change principals during re-authentication from {self.principal} to "
                            f"{principal}", "principal")
        now = self.clock()
        ends = [now + self.reauth_ms / 1000] if self.reauth_ms else []
        if self._exchange.expires_at is not None:
            ends.append(self._exchange.expires_at)
        self.expires_at = min(ends) if ends else None
        self.principal, self.authenticated, self._reauth = principal, True, reauth
        self._exchange, self.raw_tokens = None, False
        return max(1, round((self.expires_at - now) * 1000)) if self.expires_at is not None else 0


MAX_ECHOED = 512  # characters of the client's input an error message repeats (a user name may be 40 KB)


def failure_message(mechanism: Optional[str], e: SaslError) -> str:
    """The error message Kafka's broker sends with SASL_AUTHENTICATION_FAILED; what it repeats of the
    client's input is cut to MAX_ECHOED characters (a string over 32,767 bytes cannot be encoded at all)."""
    detail = str(e)
    if len(detail) > MAX_ECHOED:
        detail = detail[:MAX_ECHOED] + f"... ({len(detail) - MAX_ECHOED} more characters)"
    if e.reason in ("credentials", "unknown-user", "token"):
        return (f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{mechanism}: {detail}")
    return f"Authentication failed with SASL mechanism {mechanism}: {detail}"
