"""SaslHandshake and SaslAuthenticate: the connection's SaslServer (kcodec.protocol.sasl) answers them.

A SASL listener's session holds a SaslServer (mechanisms.sasl_server): handshake v0 (bare tokens follow,
server.py hands them to it), v1 (SaslAuthenticate follows), KIP-368 re-authentication and the session's
lifetime are its. A failed exchange is answered, then the connection closes (session.close_after_response).
"""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                             SaslHandshakeResponse)

from ..context import Context, Session
from . import handles


def _settled(session: Session) -> None:
    """What the exchange's step decided for the connection: who it is now, and whether it closes."""
    sasl = session.sasl
    assert sasl is not None
    if sasl.authenticated:
        session.principal = sasl.principal or session.principal
    session.close_after_response = sasl.close_after_response


@handles(SaslHandshakeRequest, SaslHandshakeResponse)
def sasl_handshake(ctx: Context, req: Any) -> SaslHandshakeResponse:
    sasl = ctx.session.sasl
    if sasl is None:  # a listener without SASL
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    resp = sasl.handshake(req, ctx.version)
    _settled(ctx.session)
    return resp


@handles(SaslAuthenticateRequest, SaslAuthenticateResponse)
def sasl_authenticate(ctx: Context, req: Any) -> SaslAuthenticateResponse:
    sasl = ctx.session.sasl
    if sasl is None:
        ctx.session.close_after_response = True
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                        error_message="SaslAuthenticate needs a SaslHandshake v1 first")
    resp = sasl.authenticate(req, ctx.version)
    _settled(ctx.session)
    return resp
