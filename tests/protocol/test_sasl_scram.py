"""SCRAM computations against RFC 5802 (SHA-1, the generic code) and RFC 7677 (SHA-256), both sides,
and every way an exchange can be refused."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from kcodec.protocol.sasl import SaslError
from kcodec.protocol.sasl.scram import ScramClient, ScramCredential, ScramServer, salted_password

# (mechanism, client nonce, server nonce part, salt, client-final, server-final): the RFCs' examples,
# user "user", password "pencil", 4096 iterations.
RFC_VECTORS = [
    ("SCRAM-SHA-1", "fyko+d2lbbFgONRv9qkxdawL", "3rfcNHYJY1ZVvWVs7j", "QSXCR+Q6sek8bf92",
     "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
     "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
    ("SCRAM-SHA-256", "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "W22ZaJ0SNY7soEsUEjb6gQ==",
     "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
     "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
]


@pytest.mark.parametrize("mechanism, cnonce, snonce, salt, client_final, server_final", RFC_VECTORS,
                         ids=[v[0] for v in RFC_VECTORS])
def test_client_matches_the_rfc(mechanism, cnonce, snonce, salt, client_final, server_final):
    client = ScramClient(mechanism, "user", "pencil", nonce=cnonce)
    assert client.first() == f"n,,n=user,r={cnonce}".encode()
    server_first = f"r={cnonce}{snonce},s={salt},i=4096".encode()
    assert client.final(server_first).decode() == client_final
    client.verify(server_final.encode())  # the RFC's server signature verifies


@pytest.mark.parametrize("mechanism, cnonce, snonce, salt, client_final, server_final", RFC_VECTORS,
                         ids=[v[0] for v in RFC_VECTORS])
def test_server_matches_the_rfc(mechanism, cnonce, snonce, salt, client_final, server_final):
    cred = ScramCredential.from_password(mechanism, "pencil", 4096, base64.b64decode(salt))
    server = ScramServer(mechanism, {"user": cred}.get, nonce=snonce)
    assert server.first(f"n,,n=user,r={cnonce}".encode()) == f"r={cnonce}{snonce},s={salt},i=4096".encode()
    assert server.final(client_final.encode()).decode() == server_final
    assert server.user == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_whole_exchange_and_what_the_server_keeps(mechanism):
    cred = ScramCredential.from_password(mechanism, "s3cret,=", 4096)
    assert cred.matches_password(mechanism, "s3cret,=") and not cred.matches_password(mechanism, "s3cret")
    assert b"s3cret" not in repr(cred).encode() and ScramCredential.from_json(cred.to_json()) == cred
    client, server = ScramClient(mechanism, "a=b,c", "s3cret,="), ScramServer(mechanism, {"a=b,c": cred}.get)
    client.verify(server.final(client.final(server.first(client.first()))))
    assert server.user == "a=b,c"  # the name went escaped (=3D, =2C) and came back whole
    assert len(cred.stored_key) == len(cred.server_key) == (32 if mechanism.endswith("256") else 64)
    assert salted_password(mechanism, "x", b"salt", 4096) != salted_password(mechanism, "x", b"salt", 4097)


def _exchange(password: str = "pw", user: str = "alice"):
    cred = ScramCredential.from_password("SCRAM-SHA-256", "pw")
    client = ScramClient("SCRAM-SHA-256", user, password)
    server = ScramServer("SCRAM-SHA-256", {"alice": cred}.get)
    return client, server, cred


def test_wrong_password_unknown_user_and_tampered_signature_each_say_so():
    client, server, _ = _exchange("wrong")
    final = client.final(server.first(client.first()))
    with pytest.raises(SaslError, match="wrong password for user 'alice'") as e:
        server.final(final)
    assert e.value.reason == "credentials"
    client, server, _ = _exchange(user="bob")
    with pytest.raises(SaslError, match="unknown user 'bob'") as e:
        server.first(client.first())
    assert e.value.reason == "unknown-user"
    client, server, cred = _exchange()
    server.lookup = lambda user: dataclasses.replace(cred, server_key=bytes(32))  # a server without the key
    server_final = server.final(client.final(server.first(client.first())))
    with pytest.raises(SaslError, match="signature does not verify") as e:
        client.verify(server_final)
    assert e.value.reason == "server-signature"
    client, server, _ = _exchange()
    client.final(server.first(client.first()))
    with pytest.raises(SaslError, match="refused the SCRAM proof: invalid-proof") as e:
        client.verify(b"e=invalid-proof")


def test_the_client_refuses_a_bad_server_first_message():
    for bad, match in [(b"r=other,s=c2FsdA==,i=4096", "nonce"), (b"s=c2FsdA==,i=4096", "lacks"),
                       (b"garbage", "not an attribute"), (b"\xff", "not UTF-8"), (b"e=unknown-user", "refused")]:
        client = ScramClient("SCRAM-SHA-512", "alice", "pw", nonce="abc")
        with pytest.raises(SaslError, match=match):
            client.final(bad)
    client = ScramClient("SCRAM-SHA-512", "alice", "pw", nonce="abc")
    with pytest.raises(SaslError, match="fewer than the minimum 4096"):
        client.final(b"r=abcdef,s=c2FsdA==,i=1")
    with pytest.raises(SaslError, match="more than this client computes"):
        client.final(b"r=abcdef,s=c2FsdA==,i=999999999")
    with pytest.raises(SaslError, match="not base64"):
        client.final(b"r=abcdef,s=!!,i=4096")
    with pytest.raises(SaslError, match="unknown SCRAM mechanism"):
        ScramClient("SCRAM-MD5", "a", "b")


def test_the_server_refuses_bad_client_messages():
    client, server, _ = _exchange()
    for bad in [b"alice", b"p=tls-unique,,n=alice,r=x", b"n,,r=x,n=alice", b"n,,n=alice,r=", b"n,,n=al=ice,r=x",
                b"\xfe\xff"]:
        with pytest.raises(SaslError):
            ScramServer("SCRAM-SHA-256", lambda u: None).first(bad)
    with pytest.raises(SaslError, match="differs from user"):
        server.first(b"n,a=bob,n=alice,r=xyz")
    with pytest.raises(SaslError, match="before the client-first"):
        server.final(b"c=biws,r=x,p=AA==")
    mutations = [(lambda f: f.replace(b"c=biws", b"c=eSws"), "channel binding"),
                 (lambda f: f.replace(b",r=", b",r=X"), "wrong nonce"),
                 (lambda f: f[: f.rindex(b",")], "c=...,r=...,p="),
                 (lambda f: f[: f.rindex(b"p=") + 2] + b"AAAA", "proof of 3 bytes")]
    firsts = set()
    for mutate, match in mutations:
        client, server, _ = _exchange()
        final = client.final(server.first(client.first()))
        firsts.add(server._server_nonce)
        with pytest.raises(SaslError, match=match):
            server.final(mutate(final))
    assert len(firsts) == len(mutations)  # a new server nonce each time
