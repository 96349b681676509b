"""SaslHandshake (v0: a bare token follows; v1: SaslAuthenticate follows) and SaslAuthenticate, PLAIN only."""

from __future__ import annotations

import hmac
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                             SaslHandshakeResponse)

from ..acl import principal_of
from ..context import ClusterRuntime, Context
from . import handles

MECHANISMS = ["PLAIN"]
FAILED = "Authentication failed: Invalid username or password"


def check_plain(runtime: ClusterRuntime, token: bytes) -> Optional[str]:
    """The user a PLAIN token (authzid NUL authcid NUL password, RFC 4616) authenticates, or None."""
    parts = bytes(token).split(b"\x00")
    if len(parts) != 3 or runtime.users is None:
        return None
    try:
        authzid, user, password = (p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        return None
    if authzid and authzid != user:
        return None
    expected = runtime.users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        return None
    return user


@handles(SaslHandshakeRequest, SaslHandshakeResponse)
def sasl_handshake(ctx: Context, req: Any) -> SaslHandshakeResponse:
    s = ctx.session
    if not ctx.runtime.sasl or s.authenticated or s.mechanism is not None:
        s.close_after_response = ctx.runtime.sasl
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                     mechanisms=MECHANISMS if ctx.runtime.sasl else [])
    if req.mechanism not in MECHANISMS:
        s.close_after_response = True
        return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=MECHANISMS)
    s.mechanism = req.mechanism
    s.handshake_version = ctx.version
    s.raw_token_next = ctx.version == 0
    return SaslHandshakeResponse(mechanisms=MECHANISMS)


def authenticate(ctx_runtime: ClusterRuntime, session: Any, token: bytes) -> bool:
    user = check_plain(ctx_runtime, token)
    if user is None:
        return False
    session.principal = principal_of(user)
    session.authenticated = True
    return True


@handles(SaslAuthenticateRequest, SaslAuthenticateResponse)
def sasl_authenticate(ctx: Context, req: Any) -> SaslAuthenticateResponse:
    s = ctx.session
    if s.mechanism is None or s.handshake_version != 1 or s.authenticated:
        s.close_after_response = True
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                        error_message="SaslAuthenticate needs a SaslHandshake v1 first")
    if not authenticate(ctx.runtime, s, req.auth_bytes):
        s.close_after_response = True
        return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=FAILED)
    return SaslAuthenticateResponse(error_message=None)
