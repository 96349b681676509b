"""Kafka's SASL framing on a client connection, as an exchange the caller drives, and KIP-368's schedule.

SaslHandshake names the mechanism; with handshake v1 each SASL message travels in a SaslAuthenticate
request (KIP-152), with v0 (Kafka before 1.0) as a bare size-prefixed token the broker answers the same
way. ``Authentication(conn, sasl)`` is that exchange on a ClientConnection: ``start()`` gives the
SaslHandshake request, ``receive(event)`` the next request or token, or None when authenticated; a refusal
is a SaslError (reason "mechanism": not enabled, "credentials": refused, with the broker's message, or the
mechanism's own). SaslAuthenticate v1+ says how long the session lasts (``lifetime_ms``); a client
re-authenticates on the same connection before it ends (``reauthentication_due``).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Callable, Optional

from kcodec.errors import name_of
from kcodec.messages import SaslAuthenticateRequest, SaslHandshakeRequest

from ..errors import RemoteProtocolError, SaslError
from ..events import Outgoing, Request, Response, ResponseFailed, TokenReceived
from .mechanisms import ClientMechanism, Sasl

if TYPE_CHECKING:
    from ..client import ClientConnection


class Authentication:
    """One SASL exchange on a connection whose versions are negotiated (see the module's text)."""

    def __init__(self, conn: ClientConnection, sasl: Sasl) -> None:
        self.conn, self.sasl = conn, sasl
        self.lifetime_ms: Optional[int] = None  # KIP-368: what SaslAuthenticate v1+ granted (None: no end)
        self.done = False
        self._mechanism: Optional[ClientMechanism] = None
        self._raw = False
        self._auth_version: Optional[int] = None

    def start(self) -> Request:
        versions = self.conn.versions
        hs_version = versions.pick(SaslHandshakeRequest)
        self._auth_version = versions.pick(SaslAuthenticateRequest)
        if hs_version is None:
            raise SaslError("the broker does not offer SASL (no SaslHandshake)", "mechanism")
        self._raw = hs_version == 0 or self._auth_version is None  # Kafka < 1.0: bare tokens
        return self.conn.send(SaslHandshakeRequest(mechanism=self.sasl.mechanism), hs_version)

    def receive(self, event: Any) -> Optional[Outgoing]:
        """The answer to the last request or token: the next one to send, or None (authenticated)."""
        if isinstance(event, ResponseFailed):
            raise RemoteProtocolError(f"{event.request.api} v{event.request.version} response: {event.error}")
        if self._mechanism is None:
            hs = _response(event, SaslHandshakeRequest.API_KEY).message
            if hs.error_code:
                raise SaslError(f"{self.sasl.mechanism} refused ({name_of(hs.error_code)}); "
                                f"enabled: {', '.join(hs.mechanisms) or 'none'}", "mechanism")
            self._mechanism = self.sasl.client()
            return self._send(self._mechanism.start())
        if self._raw:
            if not isinstance(event, TokenReceived):
                raise TypeError(f"expected the broker's bare SASL token, got {event!r}")
            challenge = event.data
        else:
            resp = _response(event, SaslAuthenticateRequest.API_KEY).message
            if resp.error_code:
                text = f": {resp.error_message}" if resp.error_message else ""
                raise SaslError(f"{name_of(resp.error_code)}{text}", "credentials")
            challenge = bytes(resp.auth_bytes)  # a memoryview when decoded zero-copy
            self.lifetime_ms = getattr(resp, "session_lifetime_ms", 0) or None
        answer = self._mechanism.step(challenge)
        if answer is None:
            self.done = True
            return None
        return self._send(answer)

    def _send(self, message: bytes) -> Outgoing:
        if self._raw:
            return self.conn.send_token(message)
        return self.conn.send(SaslAuthenticateRequest(auth_bytes=message), self._auth_version)


def _response(event: Any, api_key: int) -> Response:
    if not isinstance(event, Response) or event.request.api_key != api_key:
        raise TypeError(f"expected the response to api key {api_key}, got {event!r}")
    return event


def reauthentication_due(lifetime_ms: Optional[int], now: float,
                         uniform: Callable[[float, float], float] = random.uniform) -> float:
    """When to re-authenticate a session of ``lifetime_ms`` that started at ``now`` (seconds): at a random
    point between 85 and 95 % of its lifetime, as Kafka's Java client picks; infinity when it does not end."""
    if not lifetime_ms:
        return float("inf")
    return now + lifetime_ms / 1000 * uniform(0.85, 0.95)
