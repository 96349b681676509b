"""SASL with no sockets: a client's Authentication against a SaslServer, wired in memory, for every mechanism,
with SaslAuthenticate (handshake v1) and bare tokens (handshake v0); refusals with their reasons; KIP-368."""

from __future__ import annotations

import pytest

from kcodec.messages import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kcodec.protocol import Authentication, ClientConnection, RequestReceived, Sasl, SaslError, SaslServer, TokenReceived
from kcodec.protocol.sasl import (OAuthBearerServer, PlainServer, ScramServerMechanism, oauthbearer,
                                  reauthentication_due)
from kcodec.protocol.sasl.scram import ScramCredential

from protocol_support import Wire, api_versions

USERS = {"alice": "secret", "bob": "hunter2"}
CREDS = {(u, m): ScramCredential.from_password(m, p) for u, p in USERS.items()
         for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


def sasl_server(now: list[float], **kw) -> SaslServer:
    mechanisms = {
        "PLAIN": lambda: PlainServer(lambda user, password: USERS.get(user) == password),
        "OAUTHBEARER": lambda: OAuthBearerServer(scope=("read",)),
        **{m: (lambda m=m: ScramServerMechanism(m, lambda user: CREDS.get((user, m))))
           for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")},
    }
    return SaslServer(mechanisms, clock=lambda: now[0], **kw)


def wired(sasl: SaslServer, handshake: int = 1) -> Wire:
    """A negotiated client, and a server that answers ApiVersions and hands SASL to ``sasl``."""
    def handle(event):
        if isinstance(event, TokenReceived):
            reply = sasl.token(event.data)
            wire.server.raw_tokens = sasl.raw_tokens
            if reply is None:
                raise SaslError(f"closed: {sasl.failure}", sasl.failure.reason if sasl.failure else "")
            return reply
        assert isinstance(event, RequestReceived) and sasl.allows(event.api_key)
        if isinstance(event.message, ApiVersionsRequest):
            return api_versions({17: (0, handshake), 36: (0, 2), 18: (0, 4)})
        if isinstance(event.message, SaslHandshakeRequest):
            resp = sasl.handshake(event.message, event.version)
            wire.server.raw_tokens = sasl.raw_tokens
            return resp
        assert isinstance(event.message, SaslAuthenticateRequest)
        return sasl.authenticate(event.message, event.version)

    wire = Wire(ClientConnection(), handle)
    wire.run(wire.client.negotiation())
    return wire


def sasl_for(mechanism: str, user: str = "alice", password: str = "secret", **kw) -> Sasl:
    if mechanism == "OAUTHBEARER":
        return Sasl(mechanism, token=kw.get("token") or oauthbearer.unsecured_token(user, scope=["read"]))
    return Sasl(mechanism, user, password)


@pytest.mark.parametrize("handshake", [1, 0])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_every_mechanism_authenticates(mechanism, handshake):
    now = [1000.0]
    sasl = sasl_server(now, reauth_ms=60_000)
    wire = wired(sasl, handshake)
    auth = wire.run(Authentication(wire.client, sasl_for(mechanism)))
    assert auth.done and sasl.authenticated and sasl.principal == "User:alice" and not sasl.raw_tokens
    tokens = [e for e in wire.seen if isinstance(e, TokenReceived)]
    assert bool(tokens) == (handshake == 0)  # v0: bare tokens; v1: SaslAuthenticate
    if handshake:  # KIP-368: the lifetime the server grants travels in SaslAuthenticate v1+
        assert auth.lifetime_ms == 60_000 and sasl.expires_at == 1060.0


@pytest.mark.parametrize("mechanism, password, reason, match", [
    ("PLAIN", "wrong", "credentials", r"SASL_AUTHENTICATION_FAILED: Authentication failed during authentication due "
                                      r"to invalid credentials with SASL mechanism PLAIN: wrong password"),
    ("SCRAM-SHA-256", "wrong", "credentials", r"SASL_AUTHENTICATION_FAILED: .*wrong password for user 'alice'"),
    ("OAUTHBEARER", None, "credentials",  # Kafka's message: its error challenge
     r'SASL_AUTHENTICATION_FAILED: \{"status":"insufficient_scope", "scope":"\[read\]"\}'),
])
def test_refusals_say_why(mechanism, password, reason, match):
    sasl = sasl_server([1000.0])
    wire = wired(sasl)
    who = sasl_for(mechanism, password=password or "x", token=oauthbearer.unsecured_token("alice"))
    with pytest.raises(SaslError, match=match) as e:
        wire.run(Authentication(wire.client, who))
    assert e.value.reason == reason and sasl.close_after_response and not sasl.authenticated


def test_a_mechanism_not_enabled_and_a_broker_without_sasl():
    sasl = SaslServer({"SCRAM-SHA-512": lambda: ScramServerMechanism("SCRAM-SHA-512", lambda u: None)})
    wire = wired(sasl)
    with pytest.raises(SaslError, match=r"PLAIN refused \(UNSUPPORTED_SASL_MECHANISM\); enabled: SCRAM-SHA-512") as e:
        wire.run(Authentication(wire.client, Sasl("PLAIN", "a", "b")))
    assert e.value.reason == "mechanism"
    bare = ClientConnection()
    bare.versions.broker = {3: (0, 12)}
    with pytest.raises(SaslError, match="does not offer SASL"):
        Authentication(bare, Sasl("PLAIN", "a", "b")).start()


def test_a_v0_failure_is_a_closed_connection_with_the_servers_reason():
    sasl = sasl_server([1000.0])
    wire = wired(sasl, handshake=0)
    with pytest.raises(SaslError, match="closed: wrong password") as e:
        wire.run(Authentication(wire.client, Sasl("PLAIN", "alice", "nope")))
    assert e.value.reason == "credentials"


def test_the_server_checks_its_scram_signature_on_the_client():
    sasl = sasl_server([1000.0])
    wire = wired(sasl)
    CREDS[("mallory", "SCRAM-SHA-256")] = ScramCredential.from_password("SCRAM-SHA-256", "other")
    try:  # a server holding another password's credential cannot sign: the client refuses it
        with pytest.raises(SaslError):
            wire.run(Authentication(wire.client, Sasl("SCRAM-SHA-256", "mallory", "mine")))
    finally:
        del CREDS[("mallory", "SCRAM-SHA-256")]


def test_kip_368_sessions_end_and_are_renewed_on_the_same_connection():
    now = [1000.0]
    sasl = sasl_server(now, reauth_ms=10_000)
    wire = wired(sasl)
    wire.run(Authentication(wire.client, Sasl("SCRAM-SHA-256", "alice", "secret")))
    assert sasl.allows(3) and not sasl.expired()
    now[0] = 1011.0
    assert sasl.expired() and not sasl.allows(3) and sasl.allows(17)  # only SASL passes after the end
    again = wire.run(Authentication(wire.client, Sasl("SCRAM-SHA-256", "alice", "secret")))
    assert again.lifetime_ms == 10_000 and sasl.allows(3) and sasl.expires_at == 1021.0
    with pytest.raises(SaslError, match="Cannot change principals"):  # the same principal, or the end
        wire.run(Authentication(wire.client, Sasl("SCRAM-SHA-256", "bob", "hunter2")))


def test_an_oauthbearer_token_ends_the_session_no_later_than_it_expires(monkeypatch):
    now = [1000.0]
    sasl = SaslServer({"OAUTHBEARER": lambda: OAuthBearerServer()}, reauth_ms=3_600_000, clock=lambda: now[0])
    wire = wired(sasl)
    token = oauthbearer.unsecured_token("alice", issued_at=1000.0, lifetime=60)
    monkeypatch.setattr(oauthbearer.time, "time", lambda: 1000.0)  # the unsecured validator's clock
    auth = wire.run(Authentication(wire.client, Sasl("OAUTHBEARER", token=token)))
    assert auth.lifetime_ms == 60_000 and sasl.expires_at == 1060.0


def test_a_pluggable_validator_decides():
    seen = []

    def validate(token, extensions):
        seen.append((token, dict(extensions)))
        if token != "good":
            raise SaslError("not good", "token")
        return oauthbearer.TokenClaims("svc", 2e9, None, ())

    sasl = SaslServer({"OAUTHBEARER": lambda: OAuthBearerServer(validate)})
    wire = wired(sasl)
    wire.run(Authentication(wire.client, Sasl("OAUTHBEARER", token="good")))
    assert sasl.principal == "User:svc" and seen == [("good", {})]
    with pytest.raises(SaslError, match='"status":"invalid_token"'):  # Kafka's message: the error challenge
        wire2 = wired(SaslServer({"OAUTHBEARER": lambda: OAuthBearerServer(validate)}))
        wire2.run(Authentication(wire2.client, Sasl("OAUTHBEARER", token="bad")))
    assert seen[-1] == ("bad", {})


def test_reauthentication_is_due_at_85_to_95_percent_of_the_lifetime():
    assert reauthentication_due(None, 5.0) == float("inf")
    assert reauthentication_due(10_000, 100.0, lambda lo, hi: lo) == pytest.approx(108.5)
    assert reauthentication_due(10_000, 100.0, lambda lo, hi: hi) == pytest.approx(109.5)
    assert all(108.5 <= reauthentication_due(10_000, 100.0) <= 109.5 for _ in range(50))
