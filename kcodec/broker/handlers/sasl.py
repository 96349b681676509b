"""SaslHandshake (v0: bare tokens follow; v1: SaslAuthenticate follows), SaslAuthenticate, and KIP-368.

The mechanisms themselves are in ..mechanisms. A session authenticated with SaslAuthenticate v1+
learns its lifetime (the re-authentication interval, or less when its OAUTHBEARER token ends sooner)
and may re-authenticate on the same connection with the same mechanism and principal; past its
lifetime the server closes the connection at its next request that is not re-authentication.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                             SaslHandshakeResponse)
from kcodec.security import SaslError

from ..acl import principal_of
from ..context import Context, Session
from ..mechanisms import mechanism_server
from . import handles

log = logging.getLogger("kcodec.broker")


@handles(SaslHandshakeRequest, SaslHandshakeResponse)
def sasl_handshake(ctx: Context, req: Any) -> SaslHandshakeResponse:
    s = ctx.session
    settings = s.listener.sasl_settings
    mechanisms = list(settings.mechanisms)
    reauth = s.authenticated and s.reauth and ctx.version >= 1
    if not s.listener.sasl or (s.authenticated and not reauth) or s.exchange is not None:
        s.close_after_response = s.listener.sasl
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
    if req.mechanism not in mechanisms:
        s.close_after_response = True
        return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms)
    if reauth and req.mechanism != s.mechanism:  # KIP-368: the same mechanism, or the connection ends
        s.close_after_response = True
        log.warning("re-authentication with %s after %s refused", req.mechanism, s.mechanism)
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
    s.mechanism = req.mechanism
    s.handshake_version = ctx.version
    s.exchange = mechanism_server(req.mechanism, settings, ctx.state.credentials)
    s.raw_tokens = ctx.version == 0
    return SaslHandshakeResponse(mechanisms=mechanisms)


@handles(SaslAuthenticateRequest, SaslAuthenticateResponse)
def sasl_authenticate(ctx: Context, req: Any) -> SaslAuthenticateResponse:
    s = ctx.session
    if s.exchange is None or s.raw_tokens:
        s.close_after_response = True
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                        error_message="SaslAuthenticate needs a SaslHandshake v1 first")
    try:
        reply, done = s.exchange.step(req.auth_bytes)
        lifetime_ms = _finish(s, reauth=ctx.version >= 1) if done else 0
    except SaslError as e:
        s.close_after_response = True
        s.exchange = None
        return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=(
            str(e) if e.reason == "error-challenge" else failure_message(s.mechanism, e)))
    resp = SaslAuthenticateResponse(error_message=None, auth_bytes=reply)
    if ctx.version >= 1:
        resp.session_lifetime_ms = lifetime_ms
    return resp


def raw_token(session: Session, token: bytes) -> Optional[bytes]:
    """After SaslHandshake v0: the server's bare answer to a bare client token; None: authentication
    failed (with v0 the only way to say so is to close the connection)."""
    assert session.exchange is not None
    try:
        reply, done = session.exchange.step(token)
        if done:
            _finish(session, reauth=False)
    except SaslError as e:
        log.info("SASL %s (handshake v0) failed: %s", session.mechanism, e)
        return None
    return reply


def _finish(s: Session, *, reauth: bool) -> int:
    """The exchange succeeded: set the principal and the session's end; its lifetime in ms (0: none)."""
    assert s.exchange is not None and s.exchange.user is not None
    principal = principal_of(s.exchange.user)
    if s.authenticated and principal != s.principal:
        raise SaslError(f"Cannot change principals during re-authentication from {s.principal} to {principal}",
                        "principal")
    now = time.time()
    reauth_ms = s.listener.sasl_settings.reauth_ms
    ends = [now + reauth_ms / 1000] if reauth_ms else []
    if s.exchange.expires_at is not None:
        ends.append(s.exchange.expires_at)
    s.expires_at = min(ends) if ends else None
    s.principal, s.authenticated, s.reauth = principal, True, reauth
    s.exchange, s.raw_tokens = None, False
    return max(1, round((s.expires_at - now) * 1000)) if s.expires_at is not None else 0


MAX_ECHOED = 512  # characters of the client's input an error message repeats (a user name may be 40 KB)


def failure_message(mechanism: Optional[str], e: SaslError) -> str:
    detail = str(e)
    if len(detail) > MAX_ECHOED:  # an error string over 32,767 bytes cannot be encoded at all
        detail = detail[:MAX_ECHOED] + f"... ({len(detail) - MAX_ECHOED} more characters)"
    if e.reason in ("credentials", "unknown-user", "token"):
        return (f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{mechanism}: {detail}")
    return f"Authentication failed with SASL mechanism {mechanism}: {detail}"


def session_expired(session: Session) -> bool:
    return session.expires_at is not None and time.time() > session.expires_at
