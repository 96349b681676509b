"""SCRAM and OAUTHBEARER on the wire, KIP-368 session lifetimes and re-authentication, and the SCRAM
credential APIs (KIP-554) with Kafka's errors; credentials, never passwords, in the state file."""

from __future__ import annotations

import json
import struct
import time

import pytest
from broker_wire import Wire

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode
from kcodec.messages import (AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
                             ListTopicsRequest, MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest)
from kcodec.protocol.sasl import oauthbearer
from kcodec.protocol.sasl.scram import ScramClient, salted_password

USERS = {"alice": "alice-pw", "bob": "bob-pw"}
ALL = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
ALTER = AlterUserScramCredentialsRequest
DESCRIBE = DescribeUserScramCredentialsRequest


def _scram(w: Wire, mechanism: str, user: str, password: str, version: int = 2) -> object:
    """A whole SCRAM exchange over SaslAuthenticate; the last response."""
    assert w.call(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    client = ScramClient(mechanism, user, password)
    first = w.call(SaslAuthenticateRequest(auth_bytes=client.first()), version)
    assert first.error_code == 0, first.error_message
    final = w.call(SaslAuthenticateRequest(auth_bytes=client.final(first.auth_bytes)), version)
    if final.error_code == 0:
        client.verify(final.auth_bytes)
    return final


def _oauth(w: Wire, token: str, version: int = 2, handshake: bool = True) -> object:
    if handshake:
        assert w.call(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
    return w.call(SaslAuthenticateRequest(auth_bytes=oauthbearer.client_message(token)), version)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=2, users=USERS, sasl_mechanisms=ALL, system_topic_partitions=1, oauth_scope=["kafka"]) as c:
        c.create_topic("t", 1, 1)
        yield c


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("version", [0, 1, 2])
def test_scram_over_saslauthenticate(cluster, mechanism, version):
    with Wire(cluster.addresses[0]) as w:
        final = _scram(w, mechanism, "alice", "alice-pw", version)
        assert final.error_code == 0
        assert [t.name for t in w.call(ListTopicsRequest(), 0).topics] == ["t"]
        if version >= 1:
            assert final.session_lifetime_ms == 0  # no re-authentication interval, a credential without end


def test_scram_with_bare_tokens_after_handshake_v0(cluster):
    with Wire(cluster.addresses[0]) as w:
        assert w.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 0).error_code == 0
        client = ScramClient("SCRAM-SHA-512", "bob", "bob-pw")
        w.send(struct.pack(">i", len(client.first())) + client.first())
        final = client.final(w.read_frame()[4:])
        w.send(struct.pack(">i", len(final)) + final)
        client.verify(w.read_frame()[4:])
        assert [t.name for t in w.call(ListTopicsRequest(), 0).topics] == ["t"]
    with Wire(cluster.addresses[0]) as w:  # a wrong password: with bare tokens the broker can only hang up
        w.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 0)
        client = ScramClient("SCRAM-SHA-512", "bob", "nope")
        w.send(struct.pack(">i", len(client.first())) + client.first())
        final = client.final(w.read_frame()[4:])
        w.send(struct.pack(">i", len(final)) + final)
        assert w.closed_by_peer()


def test_scram_refusals_close_the_connection(cluster):
    with Wire(cluster.addresses[0]) as w:
        final = _scram(w, "SCRAM-SHA-256", "alice", "bob-pw")
        assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "wrong password for user 'alice'" in final.error_message and w.closed_by_peer()
    with Wire(cluster.addresses[0]) as w:
        w.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        r = w.call(SaslAuthenticateRequest(auth_bytes=ScramClient("SCRAM-SHA-256", "carol", "x").first()), 2)
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and "unknown user 'carol'" in r.error_message
        assert w.closed_by_peer()
    with Wire(cluster.addresses[0]) as w:
        w.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        r = w.call(SaslAuthenticateRequest(auth_bytes=b"\xff garbage"), 1)
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and "not UTF-8" in r.error_message
        assert w.closed_by_peer()


def test_oauthbearer_and_its_failure_sequence(cluster):
    with Wire(cluster.addresses[1]) as w:
        token = oauthbearer.unsecured_token("carol", lifetime=600, scope=["kafka"])
        r = _oauth(w, token)
        assert r.error_code == 0 and 595_000 < r.session_lifetime_ms <= 600_000  # the token's remaining life
        assert [t.name for t in w.call(ListTopicsRequest(), 0).topics] == ["t"]
    with Wire(cluster.addresses[1]) as w:  # RFC 7628: an error challenge, the client's 0x01, then the failure
        r = _oauth(w, oauthbearer.unsecured_token("carol", scope=["other"]))
        assert r.error_code == 0 and r.auth_bytes == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
        r = w.call(SaslAuthenticateRequest(auth_bytes=b"\x01"), 2)
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED  # Kafka's message: the challenge
        assert r.error_message == '{"status":"insufficient_scope", "scope":"[kafka]"}' and w.closed_by_peer()
    with Wire(cluster.addresses[1]) as w:  # expired: invalid_token, and the broker logs why
        r = _oauth(w, oauthbearer.unsecured_token("carol", lifetime=-300, scope=["kafka"]))
        assert r.auth_bytes == b'{"status":"invalid_token"}'
        r = w.call(SaslAuthenticateRequest(auth_bytes=b"\x01"), 2)
        assert (r.error_code, r.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, '{"status":"invalid_token"}')
    with Wire(cluster.addresses[1]) as w:
        r = _oauth(w, oauthbearer.unsecured_token("carol", lifetime=-300, scope=["kafka"]))
        r = w.call(SaslAuthenticateRequest(auth_bytes=b"not 0x01"), 2)
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and "expected the client's 0x01" in r.error_message


def test_kip368_a_session_past_its_lifetime_is_closed_unless_it_reauthenticates(caplog):
    with Cluster(users=USERS, sasl_mechanisms=ALL, reauth_ms=400, system_topic_partitions=1) as c:
        with Wire(c.addresses[0]) as w, Wire(c.addresses[0]) as idle:
            assert _scram(w, "SCRAM-SHA-256", "alice", "alice-pw").session_lifetime_ms == 400
            assert _scram(idle, "SCRAM-SHA-256", "alice", "alice-pw", version=0).error_code == 0
            w.call(MetadataRequest(topics=[]), 12)
            time.sleep(0.25)
            again = _scram(w, "SCRAM-SHA-256", "alice", "alice-pw")  # re-authenticate on the same connection
            assert again.error_code == 0 and again.session_lifetime_ms == 400
            time.sleep(0.25)  # past the first session's end, inside the second's
            w.call(MetadataRequest(topics=[]), 12)
            time.sleep(0.5)
            for conn in (w, idle):  # past the end; SaslAuthenticate v0 (idle) could not re-authenticate at all
                with pytest.raises(ConnectionError):
                    conn.call(MetadataRequest(topics=[]), 12)
            expired = [r for r in caplog.records if "after the SASL session expired" in r.getMessage()]
            assert len(expired) == 2
        with Wire(c.addresses[0]) as w:  # a token shorter than the interval sets the lifetime
            r = _oauth(w, oauthbearer.unsecured_token("carol", lifetime=0.2))
            assert r.error_code == 0 and 0 < r.session_lifetime_ms <= 200


def test_kip368_reauthentication_keeps_mechanism_and_principal():
    with Cluster(users=USERS, sasl_mechanisms=ALL, reauth_ms=60_000, system_topic_partitions=1) as c:
        with Wire(c.addresses[0]) as w:
            assert _scram(w, "SCRAM-SHA-512", "alice", "alice-pw").error_code == 0
            final = _scram(w, "SCRAM-SHA-512", "bob", "bob-pw")
            assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert "Cannot change principals during re-authentication from User:alice to User:bob" in final.error_message
            assert w.closed_by_peer()
        with Wire(c.addresses[0]) as w:
            assert _scram(w, "SCRAM-SHA-512", "alice", "alice-pw").error_code == 0
            assert w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.ILLEGAL_SASL_STATE
            assert w.closed_by_peer()
        with Wire(c.addresses[0]) as w:  # handshake v0 sessions cannot re-authenticate
            w.call(SaslHandshakeRequest(mechanism="PLAIN"), 0)
            w.send(struct.pack(">i", 15) + b"\0alice\0alice-pw")
            assert w.read_frame() == b"\0\0\0\0"
            assert w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.ILLEGAL_SASL_STATE


def _upsert(name: str, password: str, mechanism: int = 1, iterations: int = 4096, salt: bytes = b"0123456789"):
    m = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}.get(mechanism, "SCRAM-SHA-256")
    return ALTER.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
                                          salted_password=salted_password(m, password, salt, iterations))


def _results(resp) -> dict:
    return {r.user: (r.error_code, r.error_message) for r in resp.results}


def test_alter_and_describe_user_scram_credentials(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(users={"admin": "admin-pw"}, system_topic_partitions=1, state_file=state) as c:
        with Wire(c.addresses[0]) as w:
            assert _scram(w, "SCRAM-SHA-256", "admin", "admin-pw").error_code == 0
            r = w.call(ALTER(upsertions=[_upsert("dave", "dave-pw", 1), _upsert("dave", "dave-pw", 2, 8192)],
                             deletions=[]), 0)
            assert _results(r) == {"dave": (0, None)}
            r = w.call(ALTER(deletions=[ALTER.ScramCredentialDeletion(name="ghost", mechanism=1),
                                        ALTER.ScramCredentialDeletion(name="admin", mechanism=3)],
                             upsertions=[_upsert("erin", "x", iterations=100), _upsert("frank", "x", iterations=20000),
                                         _upsert("", "x"), _upsert("gina", "x"), _upsert("gina", "x")]), 0)
            assert _results(r) == {
                "ghost": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
                "admin": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
                "erin": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
                "frank": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
                "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
                "gina": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")}
            d = w.call(DESCRIBE(users=None), 0)
            assert d.error_code == 0
            assert {r.user: [(i.mechanism, i.iterations) for i in r.credential_infos] for r in d.results} == {
                "admin": [(1, 4096), (2, 4096)], "dave": [(1, 4096), (2, 8192)]}
            d = w.call(DESCRIBE(users=[DESCRIBE.UserName(name="dave"), DESCRIBE.UserName(name="nobody"),
                                       DESCRIBE.UserName(name="admin"), DESCRIBE.UserName(name="admin")]), 0)
            assert [(r.user, r.error_code) for r in d.results] == [
                ("dave", 0), ("nobody", ErrorCode.RESOURCE_NOT_FOUND), ("admin", ErrorCode.DUPLICATE_RESOURCE)]
        with Wire(c.addresses[0]) as w:  # the new user logs in with both mechanisms' credentials, and PLAIN
            assert _scram(w, "SCRAM-SHA-512", "dave", "dave-pw").error_code == 0
        with Wire(c.addresses[0]) as w:
            assert w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
            assert w.call(SaslAuthenticateRequest(auth_bytes=b"\0dave\0dave-pw"), 2).error_code == 0
            r = w.call(ALTER(deletions=[ALTER.ScramCredentialDeletion(name="dave", mechanism=2)], upsertions=[]), 0)
            assert _results(r) == {"dave": (0, None)}
    saved = json.loads(state.read_text())
    assert set(saved["scram_credentials"]) == {"admin", "dave"} and "admin-pw" not in state.read_text()
    with Cluster(system_topic_partitions=1, sasl_mechanisms=["SCRAM-SHA-256", "SCRAM-SHA-512"], state_file=state) as c:
        with Wire(c.addresses[0]) as w:  # restarted from the state file: no --user, dave still logs in
            assert _scram(w, "SCRAM-SHA-256", "dave", "dave-pw").error_code == 0
        with Wire(c.addresses[0]) as w:  # his SCRAM-SHA-512 credential was deleted
            w.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1)
            r = w.call(SaslAuthenticateRequest(auth_bytes=ScramClient("SCRAM-SHA-512", "dave", "dave-pw").first()), 2)
            assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and "unknown user 'dave'" in r.error_message


def test_credential_apis_need_cluster_permissions():
    with Cluster(users=USERS, acls=["alice:Describe:cluster"], super_users=["bob"], system_topic_partitions=1) as c:
        with Wire(c.addresses[0]) as w:
            assert _scram(w, "SCRAM-SHA-256", "alice", "alice-pw").error_code == 0
            assert w.call(DESCRIBE(users=None), 0).error_code == 0
            r = w.call(ALTER(upsertions=[_upsert("alice", "new")], deletions=[]), 0)
            assert _results(r) == {"alice": (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Authorization failed.")}
        with Wire(c.addresses[0]) as w:
            assert _scram(w, "SCRAM-SHA-256", "bob", "bob-pw").error_code == 0
            assert _results(w.call(ALTER(upsertions=[_upsert("alice", "new")], deletions=[]), 0)) == {"alice": (0, None)}
    with Cluster(users=USERS, acls=["alice:Create:cluster"], system_topic_partitions=1) as c:
        with Wire(c.addresses[0]) as w:
            assert _scram(w, "SCRAM-SHA-256", "alice", "alice-pw").error_code == 0
            assert w.call(DESCRIBE(users=None), 0).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="unknown SASL mechanism"):
        Cluster(users=USERS, sasl_mechanisms=["GSSAPI"])
    with pytest.raises(ValueError, match="must be positive"):
        Cluster(users=USERS, reauth_ms=0)
    with pytest.raises(ValueError, match="cannot load the TLS certificate"):
        Cluster(tls=("/nonexistent.pem", "/nonexistent-key.pem"))
