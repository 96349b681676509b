"""The SASL mechanisms a listener enables (``SaslSettings``) and each connection's ``SaslServer`` for them.

The mechanisms and Kafka's SASL framing are kcodec.protocol.sasl's; the broker gives them its checks:
PLAIN and SCRAM against the cluster's SCRAM credentials (credentials.py), OAUTHBEARER with Kafka's
unsecured-token validator (a refused token gets Kafka's error JSON; its cause is logged), principals as the authorizer names them (acl.principal_of).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from kcodec.protocol.sasl import (MECHANISMS, OAuthBearerServer, PlainServer, SaslError, SaslServer,
                                  ScramServerMechanism, ServerMechanism, unsecured_validator)
from kcodec.protocol.sasl.oauthbearer import DEFAULT_CLOCK_SKEW, TokenClaims

from .acl import principal_of
from .credentials import SCRAM_MECHANISMS, Credentials

log = logging.getLogger("kcodec_broker")
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
    clock_skew: float = DEFAULT_CLOCK_SKEW

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown:
            raise ValueError(f"unknown SASL mechanism(s) {', '.join(unknown)}; kcodec broker offers "
                             f"{', '.join(MECHANISMS)}")
        if self.reauth_ms is not None and self.reauth_ms <= 0:
            raise ValueError("the re-authentication interval must be positive (milliseconds)")


def _password_check(credentials: Credentials) -> Callable[[str, str], bool]:
    """SASL PLAIN's check: an unknown user is refused as such, a known one by its SCRAM credential."""
    def check(user: str, password: str) -> bool:
        if user not in credentials.users:
            raise SaslError(f"unknown user {user!r}", "unknown-user")
        return credentials.check_password(user, password)
    return check


def _logged_validator(settings: SaslSettings) -> Callable[[str, Mapping[str, str]], TokenClaims]:
    """Kafka's unsecured validator; a refusal's cause is logged (the client gets Kafka's error JSON only)."""
    validate = unsecured_validator(settings.oauth_scope, settings.clock_skew)

    def logged(token: str, extensions: Mapping[str, str]) -> TokenClaims:
        try:
            return validate(token, extensions)
        except SaslError as e:
            log.info("OAUTHBEARER token refused: %s", e)
            raise
    return logged


def sasl_server(settings: SaslSettings, credentials: Credentials) -> SaslServer:
    """A connection's SASL state for a listener with ``settings`` (the callers hold the cluster's lock
    while it checks ``credentials``, which AlterUserScramCredentials changes)."""
    def factory(mechanism: str) -> Callable[[], ServerMechanism]:
        if mechanism == "PLAIN":
            return lambda: PlainServer(_password_check(credentials))
        if mechanism == "OAUTHBEARER":
            validate = _logged_validator(settings)
            return lambda: OAuthBearerServer(validate, settings.oauth_scope)
        return lambda: ScramServerMechanism(mechanism, lambda user: credentials.get(user, mechanism))
    return SaslServer({m: factory(m) for m in settings.mechanisms}, reauth_ms=settings.reauth_ms,
                      principal_of=principal_of)
