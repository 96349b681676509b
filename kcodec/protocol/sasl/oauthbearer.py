"""OAUTHBEARER (RFC 7628, KIP-255) with Kafka's unsecured JWS tokens (alg "none"), both sides.

    token = unsecured_token("alice", lifetime=3600, scope=["read"])   # header.payload. (no signature)
    message = client_message(token)                                    # n,,^Aauth=Bearer <token>^A^A
    token, extensions = parse_client_message(message)                  # the server side
    claims = validate_unsecured_token(token, required_scope=["read"])  # sub, exp, iat, scope checked

Like Kafka's OAuthBearerUnsecuredJws, these tokens prove nothing: they are for tests and development.
A refused token gets the RFC 7628 error JSON; the client answers it with a lone 0x01 and then the
server fails the exchange (KIP-255's failure sequence).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from ..errors import SaslError

KVSEP = "\x01"
CLIENT_ABORT = b"\x01"  # a client's answer to the server's error challenge
_AUTH = re.compile(r"auth=Bearer ([-_.a-zA-Z0-9~+/=]+)\Z")
_EXT_KEY = re.compile(r"[A-Za-z]+\Z")
DEFAULT_CLOCK_SKEW = 30.0  # seconds: Kafka's allowableClockSkewMs defaults to 0; tests on one machine


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64url(part: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise SaslError(f"OAUTHBEARER token: the {what} is not base64url", "token") from None


def unsecured_token(subject: str, *, lifetime: float = 3600.0, scope: Iterable[str] = (),
                    issued_at: Optional[float] = None, claims: Optional[Mapping[str, Any]] = None) -> str:
    """An unsecured JWS (``alg: none``) with ``sub``, ``iat``, ``exp`` (seconds) and ``scope`` if given."""
    iat = time.time() if issued_at is None else issued_at
    body: dict[str, Any] = {"sub": subject, "iat": iat, "exp": iat + lifetime}
    if scope:
        body["scope"] = list(scope)
    body.update(claims or {})
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    return f"{header}.{_b64url(json.dumps(body, separators=(',', ':')).encode())}."


def client_message(token: str, authzid: str = "", extensions: Optional[Mapping[str, str]] = None) -> bytes:
    """The client's initial response: GS2 header, ``auth=Bearer <token>``, extensions, two 0x01."""
    ext = "".join(f"{KVSEP}{k}={v}" for k, v in (extensions or {}).items())
    gs2 = f"n,a={authzid}," if authzid else "n,,"
    return f"{gs2}{KVSEP}auth=Bearer {token}{ext}{KVSEP}{KVSEP}".encode("utf-8")


def parse_client_message(message: bytes) -> tuple[str, dict[str, str]]:
    """(token, extensions) of a client's initial response; SaslError when it is not one."""
    try:
        text = bytes(message).decode("utf-8")
    except UnicodeDecodeError:
        raise SaslError("OAUTHBEARER client message is not UTF-8") from None
    gs2, sep, rest = text.partition(KVSEP)
    if not sep or not gs2.startswith("n,") or not gs2.endswith(",") or not rest.endswith(KVSEP * 2):
        raise SaslError("OAUTHBEARER client message is not n,[a=ID],^Aauth=Bearer TOKEN^A...^A^A")
    pairs = rest[:-2].split(KVSEP)
    auth = _AUTH.match(pairs[0])
    if auth is None:
        raise SaslError("OAUTHBEARER client message: the first key must be auth=Bearer <token>")
    extensions = {}
    for pair in pairs[1:]:
        key, eq, value = pair.partition("=")
        if not eq or not _EXT_KEY.match(key) or key == "auth":
            raise SaslError(f"OAUTHBEARER client message: bad extension {pair!r}")
        extensions[key] = value
    return auth.group(1), extensions


@dataclass(frozen=True)
class TokenClaims:
    subject: str
    expires_at: float           # seconds since the epoch
    issued_at: Optional[float]
    scope: tuple[str, ...]


def validate_unsecured_token(token: str, *, now: Optional[float] = None, required_scope: Iterable[str] = (),
                             clock_skew: float = DEFAULT_CLOCK_SKEW, principal_claim: str = "sub") -> TokenClaims:
    """What Kafka's OAuthBearerUnsecuredValidatorCallbackHandler checks, as SaslError(reason="token")."""
    parts = token.split(".")
    if len(parts) != 3:
        raise SaslError("OAUTHBEARER token is not a JWS (header.payload.signature)", "token")
    try:
        header = json.loads(_unb64url(parts[0], "header"))
        claims = json.loads(_unb64url(parts[1], "payload"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError; nesting can be too deep
        raise SaslError("OAUTHBEARER token: header or payload is not JSON", "token") from None
    if not isinstance(header, dict) or header.get("alg") != "none" or parts[2]:
        raise SaslError("OAUTHBEARER token is not an unsecured JWS (alg none, empty signature)", "token")
    if not isinstance(claims, dict):
        raise SaslError("OAUTHBEARER token payload is not a JSON object", "token")
    subject = claims.get(principal_claim)
    if not isinstance(subject, str) or not subject.strip():
        raise SaslError(f"OAUTHBEARER token has no '{principal_claim}' string claim", "token")
    raw_exp: Any = claims.get("exp")
    raw_iat: Any = claims.get("iat")
    if not _number(raw_exp):
        raise SaslError("OAUTHBEARER token has no numeric 'exp' claim", "token")
    if raw_iat is not None and not _number(raw_iat):
        raise SaslError("OAUTHBEARER token's 'iat' claim is not a number", "token")
    exp, iat = float(raw_exp), (float(raw_iat) if raw_iat is not None else None)
    now = time.time() if now is None else now
    if exp <= now - clock_skew:
        raise SaslError(f"OAUTHBEARER token expired {now - exp:.0f}s ago", "token")
    if iat is not None and iat > now + clock_skew:
        raise SaslError("OAUTHBEARER token is issued in the future ('iat')", "token")
    if iat is not None and iat > exp:
        raise SaslError("OAUTHBEARER token expires before it is issued", "token")
    raw_scope = claims.get("scope", [])
    scope = raw_scope.split() if isinstance(raw_scope, str) else raw_scope
    if not isinstance(scope, list) or not all(isinstance(s, str) for s in scope):
        raise SaslError("OAUTHBEARER token's 'scope' claim is neither a string nor a list of strings", "token")
    missing = [s for s in required_scope if s not in scope]
    if missing:
        raise SaslError(f"OAUTHBEARER token lacks the required scope {missing}", "scope")
    return TokenClaims(subject, exp, iat, tuple(scope))


def error_challenge(required_scope: Optional[Iterable[str]] = None) -> bytes:
    """The RFC 7628 error JSON a server sends for a refused token, as Kafka's OAuthBearerSaslServer writes it:
    ``{"status":"invalid_token"}``, or for a token that lacks some of ``required_scope``
    ``{"status":"insufficient_scope", "scope":"[a, b]"}`` (the whole required scope as Java prints a list,
    and Kafka's spacing)."""
    if required_scope is None:
        return b'{"status":"invalid_token"}'
    return ('{"status":"insufficient_scope", "scope":"[' + ", ".join(required_scope) + ']"}').encode()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
