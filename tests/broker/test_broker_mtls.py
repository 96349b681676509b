"""Mutual TLS (Kafka's ssl.client.auth): required, requested and none, with kcodec's client presenting
a certificate from the broker's client CA, from another CA, or none; the certificate's subject as the
principal ACLs see, and SASL's identity winning over it on SASL_SSL."""

from __future__ import annotations

import logging
import ssl
import subprocess
import sys

import pytest

from broker_logs import wait_for_log

from kcodec_broker import Acl, Cluster
from kcodec.client import KafkaConnectionError, SyncClient

ALICE = "User:CN=alice,OU=tests,O=kcodec"
# alice (by her certificate) may see two topics, a client without one (User:ANONYMOUS) one, carol (SASL) one
ACLS = [f"{ALICE}:Describe:topic:alice-*", "User:ANONYMOUS:Describe:topic:public", "carol:Describe:topic:carol-only"]
TOPICS = ("alice-a", "alice-b", "public", "carol-only")


def _cluster(certs, client_auth: str, **kw) -> Cluster:
    ca = certs.ca if client_auth != "none" else None
    cluster = Cluster(tls=(certs.cert, certs.key), tls_client_auth=client_auth, tls_client_ca=ca,
                      system_topic_partitions=1, **{"acls": ACLS, **kw})
    for name in TOPICS:
        cluster.create_topic(name, 1, 1)
    return cluster


def _visible(cluster: Cluster, ca, pair=None, **kw) -> list[str]:
    """The topics the client sees (Metadata filters by Describe), or raises KafkaConnectionError."""
    cert = dict(tls_cert=pair.cert, tls_key=pair.key) if pair is not None else {}
    with SyncClient(cluster.bootstrap, tls=ca, connect_timeout=5, request_timeout=5, timeout=5,
                    retry_backoff_max=0.2, **cert, **kw) as client:
        return sorted(t.name for t in client.list_topics())


@pytest.mark.parametrize("client_auth, alice, nobody, stranger", [
    ("required", ["alice-a", "alice-b"], None, None),
    ("requested", ["alice-a", "alice-b"], ["public"], None),
    ("none", ["public"], ["public"], ["public"]),  # no certificate asked for: everyone is ANONYMOUS
])
def test_client_auth_modes(test_certs, stranger_client_cert, client_auth, alice, nobody, stranger):
    with _cluster(test_certs, client_auth) as cluster:
        assert cluster.security_protocol == "SSL" and cluster.tls_client_auth == client_auth
        for pair, expected in ((test_certs.clients["alice"], alice), (None, nobody),
                               (stranger_client_cert, stranger)):
            if expected is None:  # the broker ends the handshake: TLS 1.3 tells the client at its first read
                with pytest.raises(KafkaConnectionError, match="mutual TLS"):
                    _visible(cluster, test_certs.ca, pair)
            else:
                assert _visible(cluster, test_certs.ca, pair) == expected


def _plaintext(cluster: Cluster) -> None:
    with SyncClient(cluster.bootstrap, connect_timeout=5, request_timeout=5, timeout=5):
        pass


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10's asyncio drops a failed handshake silently")
def test_refused_handshakes_are_logged(test_certs, stranger_client_cert, caplog):
    """Like any refused connection: the peer's address and why (no certificate, a foreign CA's, plaintext)."""
    with caplog.at_level(logging.INFO, logger="kcodec_broker"), _cluster(test_certs, "required") as cluster:
        for refused_client, reason in (
                (lambda: _visible(cluster, test_certs.ca),
                 "PEER_DID_NOT_RETURN_A_CERTIFICATE (the client sent no certificate, which mutual TLS requires)"),
                (lambda: _visible(cluster, test_certs.ca, stranger_client_cert),
                 "the client's certificate does not verify: unable to get local issuer certificate (mutual TLS)"),
                (lambda: _plaintext(cluster), "WRONG_VERSION_NUMBER (a plaintext client?)")):
            caplog.clear()
            with pytest.raises(KafkaConnectionError):
                refused_client()
            wait_for_log(caplog, "refused")
            refused = [(r.levelno, r.getMessage()) for r in caplog.records if "refused" in r.getMessage()]
            assert refused and all(level == logging.WARNING for level, _ in refused), refused
            assert all(m.startswith("broker 1: closing ('127.0.0.1', ") for _, m in refused), refused
            assert all(m.endswith(f"): TLS handshake refused: {reason}") for _, m in refused), refused
        caplog.clear()
        assert _visible(cluster, test_certs.ca, test_certs.clients["alice"]) == ["alice-a", "alice-b"]
    assert not [r for r in caplog.records if "refused" in r.getMessage()], caplog.text


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10's asyncio drops a failed handshake silently")
def test_a_handshake_that_never_comes_is_logged(test_certs, caplog, monkeypatch):
    """A client that connects and says nothing is cut at the handshake timeout, and the broker says why."""
    import socket

    from kcodec_broker import server

    monkeypatch.setattr(server, "TLS_HANDSHAKE_TIMEOUT", 0.3)
    with caplog.at_level(logging.INFO, logger="kcodec_broker"), _cluster(test_certs, "none") as cluster:
        with socket.create_connection(("127.0.0.1", cluster.addresses[0][1]), timeout=10) as s:
            assert s.recv(1) == b""  # cut after 0.3 s
        assert wait_for_log(caplog, "TLS handshake: ") == 1, caplog.text
    assert "0.3 seconds" in caplog.text


def test_the_certificate_principal_in_acl_decisions(test_certs):
    """bob's certificate verifies, yet no ACL names User:CN=bob; alice's DN in a super user works too."""
    with _cluster(test_certs, "required") as cluster:
        assert _visible(cluster, test_certs.ca, test_certs.clients["bob"]) == []
    with _cluster(test_certs, "required", super_users=["User:CN=bob"]) as cluster:
        assert _visible(cluster, test_certs.ca, test_certs.clients["bob"]) == sorted(TOPICS)
        ready = ssl.create_default_context(cafile=str(test_certs.ca))  # a context that holds the certificate
        ready.load_cert_chain(test_certs.clients["alice"].cert, test_certs.clients["alice"].key)
        assert _visible(cluster, ready) == ["alice-a", "alice-b"]
    assert Acl.parse(f"{ALICE}:Describe:topic:alice-*") == Acl(ALICE, "Describe", "topic", "alice-*")
    assert Acl.parse("User:CN=a:Create:cluster").principal == "User:CN=a"


def test_sasl_ssl_keeps_the_sasl_principal(test_certs):
    with _cluster(test_certs, "required", users={"carol": "carol-pw"}) as cluster:
        assert cluster.security_protocol == "SASL_SSL"
        seen = _visible(cluster, test_certs.ca, test_certs.clients["alice"], sasl_mechanism="SCRAM-SHA-256",
                        sasl_user="carol", sasl_password="carol-pw")
        assert seen == ["carol-only"]  # carol's topics, not alice's
        with pytest.raises(KafkaConnectionError, match="mutual TLS"):  # SASL does not replace the certificate
            _visible(cluster, test_certs.ca, sasl_user="carol", sasl_password="carol-pw")


def test_principal_mapping_rules(test_certs):
    """ssl.principal.mapping.rules: alice's DN becomes User:alice; bob's (CN=bob) matches no rule and is
    refused; with SASL the rules do not apply."""
    rules = "RULE:^CN=([^,]*),OU=tests,.*$/$1/U"
    with _cluster(test_certs, "required", tls_principal_rules=rules, acls=["ALICE:Describe:topic:alice-a"]) as cluster:
        assert _visible(cluster, test_certs.ca, test_certs.clients["alice"]) == ["alice-a"]
        with pytest.raises(KafkaConnectionError, match="before any answer"):
            _visible(cluster, test_certs.ca, test_certs.clients["bob"])
    with _cluster(test_certs, "required", tls_principal_rules=rules, users={"carol": "carol-pw"}) as cluster:
        assert _visible(cluster, test_certs.ca, test_certs.clients["bob"], sasl_user="carol",
                        sasl_password="carol-pw") == ["carol-only"]


def test_bad_settings_are_refused(test_certs):
    with pytest.raises(ValueError, match="needs tls="):
        Cluster(tls_client_auth="required", tls_client_ca=test_certs.ca)
    with pytest.raises(ValueError, match="needs a client CA file"):
        Cluster(tls=(test_certs.cert, test_certs.key), tls_client_auth="required")
    with pytest.raises(ValueError, match="need tls="):
        SyncClient("127.0.0.1:9", tls_cert=test_certs.clients["alice"].cert)
    with pytest.raises(ValueError, match="invalid TLS principal mapping rule 'DEFAULT/L'"):
        Cluster(tls=(test_certs.cert, test_certs.key), tls_principal_rules="DEFAULT/L")


def test_the_broker_and_topics_commands(test_certs):
    """``kcodec broker --tls-client-auth required`` and ``kcodec topics list --tls-cert/--tls-key``."""
    alice = test_certs.clients["alice"]
    broker = subprocess.Popen(
        [sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", "--tls-cert", str(test_certs.cert),
         "--tls-key", str(test_certs.key), "--tls-client-auth", "required", "--tls-client-ca", str(test_certs.ca),
         "--acl", f"{ALICE}:Describe:topic:alice-*", "--acl", f"{ALICE}:Create:topic:alice-*"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = broker.stdout.readline()
        assert "SSL, client certificates required" in banner, banner + broker.stderr.read()
        bootstrap = banner.split("bootstrap ")[1].split(",")[0]
        topics = [sys.executable, "-m", "kcodec", "topics"]
        login = ["--bootstrap", bootstrap, "--tls-ca", str(test_certs.ca), "--timeout", "10"]
        made = subprocess.run([*topics, "create", "alice-x", *login, "--tls-cert", str(alice.cert),
                               "--tls-key", str(alice.key)], capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        listed = subprocess.run([*topics, "list", *login, "--tls-cert", str(alice.cert), "--tls-key", str(alice.key)],
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and "alice-x" in listed.stdout, listed.stderr
        refused = subprocess.run([*topics, "list", *login, "--timeout", "3"], capture_output=True, text=True,
                                 timeout=60)
        assert refused.returncode == 2 and "mutual TLS" in refused.stderr, refused.stderr
    finally:
        broker.terminate()
        broker.wait(30)
        broker.stdout.close()
        broker.stderr.close()


def test_cli_flags_are_checked(test_certs, capsys):
    from kcodec.cli import main

    assert main(["broker", "--listen", "127.0.0.1:0", "--tls-client-auth", "required"]) == 2
    assert "--tls-client-auth, --tls-client-ca and --tls-principal-rules need --tls-cert" in capsys.readouterr().err
    assert main(["broker", "--listen", "127.0.0.1:0", "--tls-cert", str(test_certs.cert), "--tls-key",
                 str(test_certs.key), "--tls-principal-rules", "RULE:^CN=(.*)$/$1/LU"]) == 2
    assert "invalid TLS principal mapping rule 'RULE:^CN=(.*)$/$1/LU'" in capsys.readouterr().err
    assert main(["topics", "list", "--bootstrap", "127.0.0.1:9", "--tls-cert", str(test_certs.cert)]) == 2
    assert "--tls-cert and --tls-key need --tls-ca FILE or --tls" in capsys.readouterr().err
