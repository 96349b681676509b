"""OAUTHBEARER messages (RFC 7628) and Kafka's unsecured JWS tokens: what is accepted and each refusal."""

from __future__ import annotations

import base64
import json

import pytest

from kcodec.protocol.sasl import SaslError
from kcodec.protocol.sasl.oauthbearer import (client_message, error_challenge, parse_client_message, unsecured_token,
                                         validate_unsecured_token)

NOW = 1_800_000_000.0


def _jws(header: object, claims: object, signature: str = "") -> str:
    def enc(x: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(x).encode()).decode().rstrip("=")
    return f"{enc(header)}.{enc(claims)}.{signature}"


def test_a_token_goes_through_the_client_message_and_validates():
    token = unsecured_token("alice", lifetime=60, scope=["read", "write"], issued_at=NOW)
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "none"} and token.endswith(".")
    message = client_message(token, extensions={"traceId": "42"})
    assert message == f"n,,\x01auth=Bearer {token}\x01traceId=42\x01\x01".encode()
    assert parse_client_message(message) == (token, {"traceId": "42"})
    claims = validate_unsecured_token(token, now=NOW + 10, required_scope=["read"])
    assert (claims.subject, claims.expires_at, claims.issued_at, claims.scope) == ("alice", NOW + 60, NOW,
                                                                                   ("read", "write"))
    assert validate_unsecured_token(_jws({"alg": "none"}, {"sub": "bob", "exp": NOW + 5, "scope": "a b"}),
                                    now=NOW).scope == ("a", "b")  # a space-separated scope string too


@pytest.mark.parametrize("token, match", [
    (unsecured_token("alice", lifetime=60, issued_at=NOW - 3600), "expired"),
    (unsecured_token("alice", issued_at=NOW + 3600), "issued in the future"),
    (unsecured_token("alice", issued_at=NOW, scope=["read"]), r"lacks the required scope \['write'\]"),
    (_jws({"alg": "HS256"}, {"sub": "a", "exp": NOW + 60}), "not an unsecured JWS"),
    (_jws({"alg": "none"}, {"sub": "a", "exp": NOW + 60}, "c2ln"), "not an unsecured JWS"),
    (_jws({"alg": "none"}, {"exp": NOW + 60}), "no 'sub'"),
    (_jws({"alg": "none"}, {"sub": "a", "exp": "soon"}), "numeric 'exp'"),
    (_jws({"alg": "none"}, {"sub": "a", "exp": True}), "numeric 'exp'"),
    (_jws({"alg": "none"}, {"sub": "a", "exp": NOW + 60, "iat": "x"}), "'iat' claim is not a number"),
    (_jws({"alg": "none"}, {"sub": "a", "exp": NOW + 60, "scope": 5}), "'scope' claim"),
    (_jws({"alg": "none"}, ["sub"]), "not a JSON object"),
    ("a.b", "not a JWS"), ("e30.!!!.", "not base64url|not JSON"), ("e30.e30", "not a JWS"),
])
def test_each_bad_token_is_refused_with_its_reason(token, match):
    with pytest.raises(SaslError, match=match) as e:
        validate_unsecured_token(token, now=NOW, required_scope=["write"] if "scope" in match else ())
    assert e.value.reason == ("scope" if "required scope" in match else "token")  # Kafka's insufficient_scope


@pytest.mark.parametrize("message", [
    b"n,,auth=Bearer x\x01\x01", b"y\x01auth=Bearer x\x01\x01", b"n,,\x01auth=Bearer x\x01",
    b"n,,\x01auth=Basic x\x01\x01", b"n,,\x01auth=Bearer x\x01bad key=1\x01\x01", b"n,,\x01auth=Bearer x\x01k\x01\x01",
    b"n,,\x01auth=Bearer \x01\x01", b"\xff\x01", b"",
])
def test_malformed_client_messages(message):
    with pytest.raises(SaslError, match="OAUTHBEARER client message"):
        parse_client_message(message)


def test_error_challenge_is_rfc7628_json():
    assert error_challenge() == b'{"status":"invalid_token"}'  # Kafka's bytes
    assert error_challenge(["a", "b"]) == b'{"status":"insufficient_scope", "scope":"[a, b]"}'
    assert json.loads(error_challenge(["a"])) == {"status": "insufficient_scope", "scope": "[a]"}
    assert client_message("t", authzid="alice").startswith(b"n,a=alice,\x01")
