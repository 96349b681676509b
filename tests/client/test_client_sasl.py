"""The client and ``kcodec topics`` log in to ``kcodec broker`` with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
OAUTHBEARER, over plaintext and TLS, and run the admin scenario; each failure has its own error."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid

import pytest

from kcodec import cli
from kcodec_broker import Cluster
from kcodec.client import AuthenticationError, KafkaConnectionError, NewTopic, Sasl, SyncClient
from kcodec.errors import ErrorCode
from kcodec.protocol.sasl.oauthbearer import unsecured_token

from client_support import settled

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
USER, PASSWORD = "alice", "alice-secret"


@pytest.fixture(scope="module", params=["plaintext", "tls"])
def secured(request, test_certs):
    """A 2-broker cluster with every mechanism on, SASL_PLAINTEXT or SASL_SSL; yields (cluster, CA or None)."""
    tls = request.param == "tls"
    with Cluster(brokers=2, users={USER: PASSWORD}, sasl_mechanisms=MECHANISMS, system_topic_partitions=2,
                 tls=(test_certs.cert, test_certs.key) if tls else None) as c:
        yield c, (test_certs.ca if tls else None)


def _sasl(mechanism: str, password: str = PASSWORD, user: str = USER) -> Sasl:
    return Sasl(mechanism, user, None if mechanism == "OAUTHBEARER" else password)


def _client(secured, sasl: Sasl, **kw) -> SyncClient:
    cluster, ca = secured
    return SyncClient(cluster.bootstrap, sasl=sasl, tls=ca, request_timeout=10, connect_timeout=5, **kw)


def _admin_scenario(c: SyncClient, tag: str, replicas: int) -> None:
    """Create, list, describe, describe configs, add partitions, delete: every admin call after the login."""
    created = c.create_topics([NewTopic(f"a-{tag}", 3, replicas, {"cleanup.policy": "compact"}), NewTopic(f"b-{tag}")])
    assert [r.error for r in created] == [ErrorCode.NONE] * 2
    wanted = {f"a-{tag}", f"b-{tag}"}
    assert wanted <= settled(lambda: {t.name for t in c.list_topics()}, wanted.issubset)
    [described] = c.describe_topics([f"a-{tag}"])
    assert len(described.partitions) == 3 and described.partitions[0].replicas
    assert c.describe_configs([f"a-{tag}"])[0].configs["cleanup.policy"].value == "compact"
    assert c.create_partitions({f"a-{tag}": 5})[0].ok
    assert [r.error for r in c.delete_topics([f"a-{tag}", f"b-{tag}"])] == [ErrorCode.NONE] * 2


def _logins(sent, mechanism: str) -> bool:
    return sent[("SaslHandshake", 1)] >= 1 and sent[("SaslAuthenticate", 2)] >= (2 if "SCRAM" in mechanism else 1)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_admin_scenario_with_each_mechanism(secured, mechanism):
    cluster, ca = secured
    with _client(secured, _sasl(mechanism)) as c:
        _admin_scenario(c, f"{mechanism.lower()}-{uuid.uuid4().hex[:6]}", 2)
        conns = c.client.cluster.connections()
        sent = c.client.requests_sent
    assert all(conn is not None and conn.tls == (ca is not None) for conn in conns)
    assert _logins(sent, mechanism)
    assert len(cluster.topics()["__consumer_offsets"].replicas) == 2  # the same cluster throughout


@pytest.mark.kafka
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_admin_scenario_against_apache_kafka(real_kafka, mechanism):
    """The same against Apache Kafka's SASL_PLAINTEXT listener (tests/kafka), as its super user ``admin``;
    a wrong password or an unknown user is refused with Kafka's own answer."""
    import real_kafka as rk

    user, password = "admin", rk.SASL_USERS["admin"]
    login = dict(request_timeout=10, connect_timeout=5)
    with SyncClient(real_kafka.sasl_bootstrap, sasl=_sasl(mechanism, password, user), **login) as c:
        _admin_scenario(c, f"{mechanism.lower()}-{uuid.uuid4().hex[:6]}", 1)
        sent = c.client.requests_sent
    assert _logins(sent, mechanism)
    if mechanism == "OAUTHBEARER":  # an expired token
        bad = Sasl("OAUTHBEARER", token=unsecured_token(user, lifetime=-600))
    else:
        bad = _sasl(mechanism, "wrong", user)
    for sasl in (bad, _sasl(mechanism, password, "mallory")) if mechanism != "OAUTHBEARER" else (bad,):
        with pytest.raises(AuthenticationError) as e:
            SyncClient(real_kafka.sasl_bootstrap, sasl=sasl, **login).__enter__()
        assert e.value.reason == "credentials" and f"SASL {mechanism}" in str(e.value), str(e.value)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_handshake_v0_sends_bare_tokens(secured, mechanism):
    """Kafka before 1.0: after SaslHandshake v0 the SASL messages travel without a Kafka header."""
    with _client(secured, _sasl(mechanism), max_versions={17: 0}) as c:
        assert "payments" not in {t.name for t in c.list_topics()}
        sent = c.client.requests_sent
    assert sent[("SaslHandshake", 0)] >= 1 and not any(api == "SaslAuthenticate" for api, _ in sent)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_cli_with_each_mechanism(secured, mechanism, capsys, tmp_path):
    cluster, ca = secured
    login = ["--bootstrap", cluster.bootstrap, "--sasl-mechanism", mechanism, "--sasl-user", USER]
    login += [] if mechanism == "OAUTHBEARER" else ["--sasl-password", PASSWORD]
    login += ["--tls-ca", str(ca)] if ca else []
    name = f"cli-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    assert cli.main(["topics", "create", name, "--partitions", "2", *login]) == 0
    assert cli.main(["topics", "list", "--json", *login]) == 0
    assert name in [t["name"] for t in json.loads(capsys.readouterr().out.split("\n", 3)[-1])]
    assert cli.main(["topics", "delete", name, *login]) == 0
    assert name not in cluster.topics()
    bad = ([a if a != PASSWORD else "wrong" for a in login] if mechanism != "OAUTHBEARER"
           else [*login, "--sasl-token-file", str(tmp_path / "t")])
    if mechanism == "OAUTHBEARER":
        (tmp_path / "t").write_text(unsecured_token(USER, lifetime=-600) + "\n")  # expired ten minutes ago
    capsys.readouterr()
    assert cli.main(["topics", "list", *bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: SASL {mechanism}") and ("invalid_token" in err or "wrong password" in err), err


def test_each_failure_has_its_own_error(secured):
    cluster, _ = secured

    def refused(sasl: Sasl, **kw) -> AuthenticationError:
        with pytest.raises(AuthenticationError) as e:
            with _client(secured, sasl, **kw):
                pass
        return e.value

    e = refused(_sasl("SCRAM-SHA-512", "wrong"))
    assert e.reason == "credentials" and "wrong password for user 'alice'" in str(e)
    e = refused(_sasl("SCRAM-SHA-256", user="mallory"))
    assert e.reason == "credentials" and "unknown user 'mallory'" in str(e)
    e = refused(_sasl("SCRAM-SHA-256", "wrong"), max_versions={17: 0})  # v0: the broker can only hang up
    assert e.reason == "credentials" and "closed the connection" in str(e)
    e = refused(Sasl("OAUTHBEARER", token=unsecured_token(USER, lifetime=-600)))
    assert e.reason == "credentials" and '{"status":"invalid_token"}' in str(e)  # Kafka's message
    with cluster.state.lock:  # a broker whose ServerKey is not the one made from the password
        creds = cluster.state.credentials.users[USER]
        good = creds["SCRAM-SHA-256"]
        creds["SCRAM-SHA-256"] = dataclasses.replace(good, server_key=bytes(32))
    try:
        e = refused(_sasl("SCRAM-SHA-256"))
    finally:
        with cluster.state.lock:
            creds["SCRAM-SHA-256"] = good
    assert e.reason == "server-signature" and "signature does not verify" in str(e)


def test_a_mechanism_the_broker_does_not_enable(test_certs):
    with Cluster(users={USER: PASSWORD}, sasl_mechanisms=["SCRAM-SHA-512"], system_topic_partitions=1) as c:
        with pytest.raises(AuthenticationError, match=r"SCRAM-SHA-256 refused \(UNSUPPORTED_SASL_MECHANISM\); "
                                                      r"enabled: SCRAM-SHA-512") as e:
            SyncClient(c.bootstrap, sasl=_sasl("SCRAM-SHA-256")).__enter__()
        assert e.value.reason == "mechanism"
        with SyncClient(c.bootstrap, sasl=_sasl("SCRAM-SHA-512")) as ok:
            assert ok.list_topics() == []


def test_tls_refusals_are_clear(secured, test_certs, tmp_path):
    cluster, ca = secured
    if ca is None:  # a TLS client on the plaintext listener
        with pytest.raises(KafkaConnectionError, match="TLS handshake failed.*is the listener plaintext"):
            SyncClient(cluster.bootstrap, tls=test_certs.ca, connect_timeout=5).__enter__()
        return
    with pytest.raises(KafkaConnectionError, match="closed the connection"):  # plaintext on a TLS listener
        SyncClient(cluster.bootstrap, sasl=_sasl("PLAIN"), connect_timeout=5, request_timeout=5).__enter__()
    with pytest.raises(KafkaConnectionError, match="certificate does not verify: unable to get local issuer"):
        SyncClient(cluster.bootstrap, tls=True, connect_timeout=5).__enter__()  # the system's CAs
    host = "localhost" + cluster.bootstrap[len("127.0.0.1"):].split(",")[0]
    with SyncClient(host, sasl=_sasl("PLAIN"), tls=ca) as c:  # the certificate names localhost too
        assert c.list_topics() == []
    other = tmp_path / "other"
    from kcodec.security.certs import make_test_certificates

    stranger = make_test_certificates(other, hosts=["kafka.example.com"])
    with Cluster(tls=(stranger.cert, stranger.key), system_topic_partitions=1) as c:
        with pytest.raises(KafkaConnectionError, match="certificate does not verify: IP address mismatch"):
            SyncClient(c.bootstrap, tls=stranger.ca, connect_timeout=5).__enter__()
        with SyncClient(c.bootstrap, tls=stranger.ca, tls_check_hostname=False) as ok:  # the chain still checked
            assert ok.list_topics() == [] and c.security_protocol == "SSL"


def test_kcodec_broker_and_kcodec_topics_commands(test_certs, tmp_path):
    """The two commands as a user runs them: SASL_SSL with SCRAM-SHA-512 only, credentials in the state file."""
    state = tmp_path / "state.json"
    broker = subprocess.Popen(
        [sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", "--user", f"{USER}:{PASSWORD}",
         "--sasl-mechanism", "SCRAM-SHA-512", "--tls-cert", str(test_certs.cert), "--tls-key", str(test_certs.key),
         "--state", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = broker.stdout.readline()
        assert "SASL_SSL (SCRAM-SHA-512)" in banner, banner + broker.stderr.read()
        bootstrap = banner.split("bootstrap ")[1].split(",")[0]
        topics = [sys.executable, "-m", "kcodec", "topics"]
        login = ["--bootstrap", bootstrap, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", USER,
                 "--sasl-password", PASSWORD, "--tls-ca", str(test_certs.ca)]
        made = subprocess.run([*topics, "create", "cmd-topic", *login], capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        listed = subprocess.run([*topics, "list", "--json", *login], capture_output=True, text=True, timeout=60)
        assert json.loads(listed.stdout) == [{"name": "cmd-topic", "internal": False}]
        plain = subprocess.run([*topics, "list", *login[:2], "--sasl-user", USER, "--sasl-password", PASSWORD,
                                "--tls-ca", str(test_certs.ca)], capture_output=True, text=True, timeout=60)
        assert plain.returncode == 2 and "PLAIN refused (UNSUPPORTED_SASL_MECHANISM)" in plain.stderr
    finally:
        broker.terminate()
        broker.wait(30)
        broker.stdout.close()
        broker.stderr.close()
    saved = state.read_text()
    assert PASSWORD not in saved and json.loads(saved)["scram_credentials"][USER].keys() == {
        "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert os.stat(state).st_size > 0


def test_the_cli_offers_the_clients_mechanisms():
    from kcodec.client import cli as topics_cli
    from kcodec.client.sasl import MECHANISMS as CLIENT_MECHANISMS

    assert topics_cli.MECHANISMS == CLIENT_MECHANISMS == tuple(MECHANISMS)
    with pytest.raises(ValueError, match="unknown SASL mechanism 'GSSAPI'"):
        Sasl("GSSAPI", "u", "p")
    with pytest.raises(ValueError, match="needs both a user and a password"):
        Sasl("SCRAM-SHA-256", "u")
    with pytest.raises(ValueError, match="needs a token or a user"):
        Sasl("OAUTHBEARER")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "OAUTHBEARER"])
def test_kip368_the_client_reauthenticates_before_its_session_ends(mechanism):
    import asyncio

    from kcodec.client import Client

    async def main(c: Cluster) -> tuple[int, int]:
        async with Client(c.bootstrap, sasl=_sasl(mechanism), request_timeout=5) as client:
            [conn] = client.cluster.connections()  # one broker: bootstrap and admin share it
            assert conn.session_lifetime_ms == 300 and conn.reauth is not None
            for _ in range(3):  # each pause outlives a session; concurrent requests wait for one re-authentication
                await asyncio.sleep(0.35)
                listed = await asyncio.gather(*(client.list_topics() for _ in range(4)))
                assert all(names == [] for names in listed)
            return conn.reauth.count, client.requests_sent[("SaslHandshake", 1)]

    with Cluster(users={USER: PASSWORD}, sasl_mechanisms=MECHANISMS, reauth_ms=300, system_topic_partitions=1) as c:
        count, handshakes = asyncio.run(main(c))
    assert count == 3 and handshakes == 4  # the login and three re-authentications, on one connection
