"""The broker's side of each SASL mechanism: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER (unsecured JWS).

A mechanism server takes the client's messages one by one (``step(token) -> (reply, done)``) and
raises SaslError when authentication fails; once done, ``user`` is who authenticated and
``expires_at`` (seconds since the epoch, OAUTHBEARER only) when the credential ends (KIP-368).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Protocol

from kcodec.security import SaslError, oauthbearer
from kcodec.security.scram import ScramServer

from .credentials import SCRAM_MECHANISMS, Credentials

log = logging.getLogger("kcodec.broker")
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
DEFAULT_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)  # once users are given


@dataclass(frozen=True)
class SaslSettings:
    """The cluster's SASL configuration.

    mechanisms: those enabled (empty: no SASL). reauth_ms: connections.max.reauth.ms (KIP-368; None:
    sessions last as long as their credential, which is forever except for OAUTHBEARER tokens).
    oauth_scope: the scope every OAUTHBEARER token must carry. clock_skew: seconds of tolerance on
    a token's ``exp`` and ``iat``.
    """

    mechanisms: tuple[str, ...] = ()
    reauth_ms: Optional[int] = None
    oauth_scope: tuple[str, ...] = ()
    clock_skew: float = oauthbearer.DEFAULT_CLOCK_SKEW

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown:
            raise ValueError(f"unknown SASL mechanism(s) {', '.join(unknown)}; kcodec broker offers "
                             f"{', '.join(MECHANISMS)}")
        if self.reauth_ms is not None and self.reauth_ms <= 0:
            raise ValueError("the re-authentication interval must be positive (milliseconds)")


class MechanismServer(Protocol):
    user: Optional[str]
    expires_at: Optional[float]

    def step(self, token: bytes) -> tuple[bytes, bool]: ...


class PlainServer:
    """RFC 4616: authzid NUL authcid NUL password, checked against the user's SCRAM credential."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self.user: Optional[str] = None
        self.expires_at: Optional[float] = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        parts = bytes(token).split(b"\x00")
        if len(parts) != 3:
            raise SaslError("SASL PLAIN message is not authzid NUL user NUL password")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslError("SASL PLAIN message is not UTF-8") from None
        if authzid and authzid != user:
            raise SaslError(f"SASL PLAIN: authorization id {authzid!r} differs from user {user!r}", "principal")
        if user not in self.credentials.users:
            raise SaslError(f"unknown user {user!r}", "unknown-user")
        if not self.credentials.check_password(user, password):
            raise SaslError(f"wrong password for user {user!r}", "credentials")
        self.user = user
        return b"", True


class ScramMechanismServer:
    """RFC 5802: client-first -> server-first, client-final -> server-final (the server's signature)."""

    def __init__(self, mechanism: str, credentials: Credentials) -> None:
        self.scram = ScramServer(mechanism, lambda user: credentials.get(user, mechanism))
        self.user: Optional[str] = None
        self.expires_at: Optional[float] = None
        self._first = True

    def step(self, token: bytes) -> tuple[bytes, bool]:
        if self._first:
            self._first = False
            return self.scram.first(token), False
        reply = self.scram.final(token)
        self.user = self.scram.user
        return reply, True


class OAuthBearerServer:
    """RFC 7628 with Kafka's unsecured validator: a refused token gets the error JSON, the client's
    0x01 answer then fails the exchange with that JSON as the message (Kafka's; the reason is logged)."""

    def __init__(self, settings: SaslSettings) -> None:
        self.settings = settings
        self.user: Optional[str] = None
        self.expires_at: Optional[float] = None
        self._refusal: Optional[SaslError] = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        if self._refusal is not None:
            if bytes(token) != oauthbearer.CLIENT_ABORT:
                raise SaslError("OAUTHBEARER: expected the client's 0x01 after the error challenge")
            raise self._refusal
        try:
            value, _extensions = oauthbearer.parse_client_message(token)
            claims = oauthbearer.validate_unsecured_token(value, required_scope=self.settings.oauth_scope,
                                                          clock_skew=self.settings.clock_skew)
        except SaslError as e:
            log.info("OAUTHBEARER token refused: %s", e)
            challenge = oauthbearer.error_challenge(self.settings.oauth_scope if e.reason == "scope" else None)
            self._refusal = SaslError(challenge.decode(), "error-challenge")
            return challenge, False
        self.user, self.expires_at = claims.subject, claims.expires_at
        return b"", True


def mechanism_server(mechanism: str, settings: SaslSettings, credentials: Credentials) -> MechanismServer:
    if mechanism == "PLAIN":
        return PlainServer(credentials)
    if mechanism == "OAUTHBEARER":
        return OAuthBearerServer(settings)
    return ScramMechanismServer(mechanism, credentials)
