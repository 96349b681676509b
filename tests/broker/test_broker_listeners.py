"""Several listeners per broker (Kafka's ``listeners``): each with its own security protocol, TLS and SASL
settings, and clients told the brokers' endpoints on the listener they came in on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from broker_wire import Wire

import kcodec
from kcodec_broker import Cluster, Listener
from kcodec_broker.listeners import parse_listen
from kcodec.cli import main
from kcodec.client import AuthenticationError, KafkaConnectionError, SyncClient
from kcodec.messages import DescribeClusterRequest, FindCoordinatorRequest, MetadataRequest

ALICE = "User:CN=alice,OU=tests,O=kcodec"
ACLS = [f"{ALICE}:Describe:topic:*", "carol:Describe:topic:*", "User:ANONYMOUS:Describe:topic:public",
        "User:ANONYMOUS:Describe:group:g"]


def _three_listeners(certs, **kw) -> Cluster:
    """PLAINTEXT (anonymous), INTERNAL (SASL_PLAINTEXT, carol) and SSL with client certificates required."""
    return Cluster(2, users={"carol": "carol-secret"}, tls=(certs.cert, certs.key), acls=ACLS,
                   system_topic_partitions=1,
                   listeners=[Listener("PLAINTEXT"), Listener("INTERNAL", "SASL_PLAINTEXT"),
                              Listener("SSL", tls_client_auth="required", tls_client_ca=certs.ca)], **kw)


def _client(cluster: Cluster, listener: str, certs) -> SyncClient:
    options: dict = {"connect_timeout": 5, "request_timeout": 5, "timeout": 5, "retry_backoff_max": 0.2}
    if listener == "INTERNAL":
        options.update(sasl_mechanism="SCRAM-SHA-256", sasl_user="carol", sasl_password="carol-secret")
    if listener == "SSL":
        alice = certs.clients["alice"]
        options.update(tls=certs.ca, tls_cert=alice.cert, tls_key=alice.key)
    return SyncClient(cluster.bootstrap_for(listener), **options)


def test_each_listener_has_its_security_and_advertises_its_own_endpoints(test_certs):
    with _three_listeners(test_certs) as cluster:
        for name in ("secret", "public"):
            cluster.create_topic(name, 1, 1)
        ports = {name: cluster.listener_addresses(name) for name in ("PLAINTEXT", "INTERNAL", "SSL")}
        assert len({p for addresses in ports.values() for p in addresses}) == 6  # 2 brokers x 3 listeners
        seen = {"PLAINTEXT": ["public"], "INTERNAL": ["public", "secret"], "SSL": ["public", "secret"]}
        for name, addresses in ports.items():
            with _client(cluster, name, test_certs) as client:
                described = client.describe_cluster()
                assert sorted((b.host, b.port) for b in described.brokers) == sorted(addresses), name
                assert sorted(t.name for t in client.list_topics()) == seen[name], name
        assert cluster.addresses == ports["PLAINTEXT"] and cluster.security_protocol == "PLAINTEXT"


def test_metadata_and_find_coordinator_answer_with_the_callers_listener(test_certs):
    """Raw frames on the plaintext listener; the other listeners' ports never appear in the answers."""
    with _three_listeners(test_certs) as cluster:
        plain = cluster.listener_addresses("PLAINTEXT")
        with Wire(plain[1]) as w:
            md = w.call(MetadataRequest(topics=[]), 12)
            assert sorted((b.host, b.port) for b in md.brokers) == sorted(plain)
            dc = w.call(DescribeClusterRequest(), 0)
            assert sorted((b.host, b.port) for b in dc.brokers) == sorted(plain)
            fc = w.call(FindCoordinatorRequest(key="g", key_type=0), 3)
            assert fc.error_code == 0 and (fc.host, fc.port) in plain


def test_sasl_and_tls_are_each_listeners_own(test_certs):
    with _three_listeners(test_certs) as cluster:
        # the SASL listener serves nothing before authentication
        with Wire(cluster.listener_addresses("INTERNAL")[0]) as w:
            w.send(kcodec.encode_request(MetadataRequest(topics=[]), 12, correlation_id=1, client_id="t"))
            assert w.closed_by_peer()
        # the SSL listener refuses a client without a certificate; a plaintext client gets a reason
        with pytest.raises(KafkaConnectionError, match="mutual TLS"):
            with SyncClient(cluster.bootstrap_for("SSL"), tls=test_certs.ca, connect_timeout=5, request_timeout=5,
                            timeout=5, retry_backoff_max=0.2) as client:
                client.list_topics()
        # the plaintext listener needs neither
        with SyncClient(cluster.bootstrap_for("PLAINTEXT"), connect_timeout=5, timeout=5) as client:
            assert [t.name for t in client.list_topics()] == []


def test_a_restarted_broker_keeps_every_listeners_port(test_certs):
    with _three_listeners(test_certs) as cluster:
        before = {name: cluster.listener_addresses(name) for name in ("PLAINTEXT", "INTERNAL", "SSL")}
        cluster.stop_broker(2)
        assert [len(cluster.listener_addresses(n)) for n in before] == [2, 2, 2]  # remembered for the restart
        cluster.start_broker(2)
        assert {name: cluster.listener_addresses(name) for name in before} == before
        with _client(cluster, "SSL", test_certs) as client:
            assert len(client.describe_cluster().brokers) == 2


def test_listener_settings_that_cannot_work_are_refused(test_certs):
    tls = (test_certs.cert, test_certs.key)
    with pytest.raises(ValueError, match="needs tls="):
        Cluster(listeners=[Listener("SSL")])
    with pytest.raises(ValueError, match="needs SASL mechanisms"):
        Cluster(listeners=[Listener("SASL_PLAINTEXT")])
    with pytest.raises(ValueError, match="takes no TLS settings"):
        Cluster(tls=tls, listeners=[Listener("PLAINTEXT", tls_client_auth="required")])
    with pytest.raises(ValueError, match="takes no SASL mechanisms"):
        Cluster(listeners=[Listener("PLAINTEXT", sasl_mechanisms=("PLAIN",))])
    with pytest.raises(ValueError, match="names must differ"):
        Cluster(listeners=[Listener("PLAINTEXT"), Listener("PLAINTEXT", port=1)])
    with pytest.raises(ValueError, match="is none of"):
        Cluster(listeners=[Listener("EXTERNAL")])
    with pytest.raises(ValueError, match="letters, digits"):
        Cluster(listeners=[Listener("A-B", "PLAINTEXT")])
    with pytest.raises(KeyError, match="no listener 'SSL'"):
        Cluster(listeners=[Listener("PLAINTEXT")]).listener_addresses("SSL")


def test_a_listener_may_enable_its_own_mechanisms(test_certs):
    cluster = Cluster(users={"carol": "carol-secret"}, sasl_mechanisms=["SCRAM-SHA-512"],
                      listeners=[Listener("A", "SASL_PLAINTEXT"),
                                 Listener("B", "SASL_PLAINTEXT", sasl_mechanisms=("PLAIN",))])
    def topics(listener: str, mechanism: str) -> list:
        with SyncClient(cluster.bootstrap_for(listener), sasl_mechanism=mechanism, sasl_user="carol",
                        sasl_password="carol-secret", connect_timeout=5, request_timeout=5, timeout=5,
                        retry_backoff_max=0.2) as client:
            return client.list_topics()

    with cluster:
        assert topics("A", "SCRAM-SHA-512") == [] and topics("B", "PLAIN") == []
        with pytest.raises(AuthenticationError, match="UNSUPPORTED_SASL_MECHANISM.*enabled: SCRAM-SHA-512"):
            topics("A", "PLAIN")


@pytest.mark.parametrize("text, expected", [
    ("127.0.0.1:9092", Listener("", port=9092, host="127.0.0.1")),
    ("ssl://0.0.0.0:9093", Listener("SSL", port=9093, host="0.0.0.0")),
    ("EXTERNAL=SASL_SSL://:9094", Listener("EXTERNAL", "SASL_SSL", port=9094)),
    ("[::1]:0", Listener("", port=0, host="::1")),
])
def test_parse_listen(text, expected):
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["9092", "EXTERNAL=127.0.0.1:9092", "SSL://host"])
def test_parse_listen_refuses(text):
    with pytest.raises(ValueError, match="--listen"):
        parse_listen(text)


def test_cli_opens_every_listener(test_certs):
    proc = subprocess.Popen(
        [sys.executable, "-m", "kcodec", "broker", "--listen", "PLAINTEXT://127.0.0.1:0",
         "--listen", "SECURE=SASL_SSL://127.0.0.1:0", "--user", "carol:carol-secret",
         "--tls-cert", str(test_certs.cert), "--tls-key", str(test_certs.key)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "bootstrap " in line and "PLAINTEXT; bootstrap " in line, line
        assert "SECURE: SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)" in line, line
        plain = line.split("bootstrap ")[1].split(",")[0]
        secure = line.split("bootstrap ")[2].split(",")[0]
        with SyncClient(plain, connect_timeout=5, timeout=5) as client:
            assert client.list_topics() == []
        with SyncClient(secure, tls=test_certs.ca, sasl_mechanism="SCRAM-SHA-512", sasl_user="carol",
                        sasl_password="carol-secret", connect_timeout=5, timeout=5) as client:
            assert client.list_topics() == []
    finally:
        proc.terminate()
        proc.wait(10)


def test_cli_refuses_mixed_listen_forms(capsys):
    assert main(["broker", "--listen", "127.0.0.1:0", "--listen", "SSL://127.0.0.1:0"]) == 2
    assert "each needs a protocol" in capsys.readouterr().err
