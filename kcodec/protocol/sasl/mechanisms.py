"""The SASL mechanisms, each side a state machine over bytes: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER.

A client mechanism gives its first message (``start()``) and answers each server message (``step(challenge)``)
with the next one, or None when it is done; a server mechanism takes each client message
(``step(token) -> (reply, done)``), and once done says who authenticated (``user``) and, for a token that
ends, when (``expires_at``, seconds since the epoch: KIP-368 ends the session then). Any failure is a
SaslError whose ``reason`` says which check failed. What a server checks is the caller's: PLAIN a
``check(user, password)``, SCRAM a ``lookup(user)`` of the stored credential, OAUTHBEARER a
``validate(token, extensions)`` (Kafka's unsecured-token validator by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping, Optional, Protocol, Union

from ..errors import SaslError
from . import oauthbearer
from .scram import MECHANISM_IDS, ScramClient, ScramCredential, ScramServer

MECHANISMS = ("PLAIN", *MECHANISM_IDS, "OAUTHBEARER")
TokenSource = Union[str, Callable[[], str]]


class ClientMechanism(Protocol):
    def start(self) -> bytes: ...

    def step(self, challenge: bytes) -> Optional[bytes]: ...


class ServerMechanism(Protocol):
    user: Optional[str]
    expires_at: Optional[float]

    def step(self, token: bytes) -> tuple[bytes, bool]: ...


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

    def client(self) -> ClientMechanism:
        """A fresh client side of the mechanism, for one exchange."""
        if self.mechanism == "PLAIN":
            return PlainClient(str(self.user), str(self.password))
        if self.mechanism == "OAUTHBEARER":
            token = self.token if self.token is not None else partial(
                oauthbearer.unsecured_token, str(self.user), lifetime=self.token_lifetime)
            return OAuthBearerClient(token)
        return ScramClientMechanism(ScramClient(self.mechanism, str(self.user), str(self.password)))


# -- client sides ----------------------------------------------------------------------------------------

class PlainClient:
    """RFC 4616: one message, NUL user NUL password (no authorization id, as Kafka's client)."""

    def __init__(self, user: str, password: str) -> None:
        self.user, self.password = user, password

    def start(self) -> bytes:
        return b"\0" + self.user.encode("utf-8") + b"\0" + self.password.encode("utf-8")

    def step(self, challenge: bytes) -> Optional[bytes]:
        return None


class ScramClientMechanism:
    """RFC 5802: client-first, then client-final for the server-first, then the server-final checked."""

    def __init__(self, client: ScramClient) -> None:
        self.scram = client
        self._answered = False

    def start(self) -> bytes:
        return self.scram.first()

    def step(self, challenge: bytes) -> Optional[bytes]:
        if not self._answered:
            self._answered = True
            return self.scram.final(challenge)
        self.scram.verify(challenge)
        return None


class OAuthBearerClient:
    """RFC 7628: the token in one message; a refusal (the server's error JSON) is answered with 0x01,
    after which the server fails the exchange (KIP-255)."""

    def __init__(self, token: TokenSource) -> None:
        self.token = token
        self.refused: Optional[bytes] = None

    def start(self) -> bytes:
        return oauthbearer.client_message(self.token() if callable(self.token) else self.token)

    def step(self, challenge: bytes) -> Optional[bytes]:
        if self.refused is not None:  # the server did not fail after our abort: still a refusal
            raise SaslError(f"OAUTHBEARER token refused: {self.refused.decode(errors='replace')}", "token")
        if not challenge:
            return None
        self.refused = bytes(challenge)
        return oauthbearer.CLIENT_ABORT


# -- server sides ----------------------------------------------------------------------------------------

class PlainServer:
    """RFC 4616: authzid NUL user NUL password, the password judged by ``check(user, password)`` (False:
    refused; it may raise SaslError itself, e.g. reason "unknown-user")."""

    def __init__(self, check: Callable[[str, str], bool]) -> None:
        self.check = check
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
        if not self.check(user, password):
            raise SaslError(f"wrong password for user {user!r}", "credentials")
        self.user = user
        return b"", True


class ScramServerMechanism:
    """RFC 5802: client-first -> server-first, client-final -> server-final (the server's signature), the
    user's stored credential from ``lookup(user)`` (None: unknown user)."""

    def __init__(self, mechanism: str, lookup: Callable[[str], Optional[ScramCredential]]) -> None:
        self.scram = ScramServer(mechanism, lookup)
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


Validator = Callable[[str, Mapping[str, str]], oauthbearer.TokenClaims]


def unsecured_validator(required_scope: tuple[str, ...] = (),
                        clock_skew: float = oauthbearer.DEFAULT_CLOCK_SKEW) -> Validator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler as a validator (tokens prove nothing: tests)."""
    def validate(token: str, extensions: Mapping[str, str]) -> oauthbearer.TokenClaims:
        return oauthbearer.validate_unsecured_token(token, required_scope=required_scope, clock_skew=clock_skew)
    return validate


class OAuthBearerServer:
    """RFC 7628: the client's token judged by ``validate(token, extensions) -> TokenClaims`` (SaslError when
    refused); a refused token gets Kafka's error JSON (``insufficient_scope`` naming ``scope`` when the scope
    was wanting), the client's 0x01 answer then fails the exchange with that JSON as the message, as Kafka's."""

    def __init__(self, validate: Optional[Validator] = None, scope: tuple[str, ...] = ()) -> None:
        self.validate = validate or unsecured_validator(scope)
        self.scope = scope
        self.user: Optional[str] = None
        self.expires_at: Optional[float] = None
        self._refusal: Optional[SaslError] = None
        self.refused_because: Optional[SaslError] = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        if self._refusal is not None:
            if bytes(token) != oauthbearer.CLIENT_ABORT:
                raise SaslError("OAUTHBEARER: expected the client's 0x01 after the error challenge")
            raise self._refusal
        try:
            value, extensions = oauthbearer.parse_client_message(token)
            claims = self.validate(value, extensions)
        except SaslError as e:
            challenge = oauthbearer.error_challenge(self.scope if e.reason == "scope" else None)
            self._refusal = SaslError(challenge.decode(), "error-challenge")
            self.refused_because = e  # the cause, for a log
            return challenge, False
        self.user, self.expires_at = claims.subject, claims.expires_at
        return b"", True
