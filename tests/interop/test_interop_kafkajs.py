"""kafkajs 2.2.4 (Node 20) administers kcodec's broker: js/admin.js runs the scenario, we check results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from broker_logs import wait_for_log
from needs import missing, need_tool
from interop_support import AUTH_MECHANISMS, AUTH_PASSWORD, AUTH_TOPIC, AUTH_USER, HIDDEN_TOPIC, record

from kcodec.protocol.sasl.oauthbearer import unsecured_token

pytestmark = pytest.mark.interop
JS = Path(__file__).resolve().parent / "js"
CLIENT = "kafkajs 2.2.4"


def _run(first: str, *args: str, script: str = "admin.js") -> dict:
    """One node process running js/SCRIPT with these arguments (a bootstrap, or auth.js's JSON cases, first);
    its last line of output, as JSON."""
    node = need_tool("node", "Node.js 18+ and npm; Debian's nodejs and npm packages")
    if not (JS / "node_modules" / "kafkajs").is_dir():
        missing("kafkajs in tests/interop/js/node_modules (`make test` runs npm ci there)")
    out = subprocess.run([node, str(JS / script), first, *args], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_administer(cluster):
    try:
        r = _run(cluster.bootstrap)
    finally:
        record(CLIENT, cluster)
    assert r["connect"] == {} and r["create"] == {"ok": True}
    assert {"js-explicit", "js-default", "__consumer_offsets"} <= set(r["list"]["ok"])
    assert r["describeConfigs"]["ok"] == [["cleanup.policy", "delete"], ["retention.ms", "604800000"]]
    assert "error" not in r["createPartitions"]
    # explicit: 3 partitions raised to 5, replication 2; defaults: num.partitions 2, default.replication.factor 2
    assert sorted(r["metadata"]["ok"]) == [["js-default", 2, 2], ["js-explicit", 5, 2]]
    assert r["alreadyExists"] == {"ok": False}  # kafkajs reports TOPIC_ALREADY_EXISTS as false
    assert r["badReplication"]["errors"] == ["INVALID_REPLICATION_FACTOR"]
    assert r["deleteSystem"]["error"] == "INVALID_TOPIC_EXCEPTION"
    assert "error" not in r["delete"] and "js-default" not in r["listAfter"]["ok"]
    assert "js-default" not in cluster.topics() and len(cluster.topics()["js-explicit"].replicas) == 5


def test_unauthorized_under_sasl_plain(secured):
    try:
        r = _run(secured.bootstrap, "alice", "alice-pw")
        wrong = _run(secured.bootstrap, "alice", "nope")
    finally:
        record(CLIENT + " (SASL PLAIN)", secured)
    assert r["connect"] == {}
    assert r["create"]["errors"] == ["TOPIC_AUTHORIZATION_FAILED"]
    assert r["delete"]["error"] == "TOPIC_AUTHORIZATION_FAILED"
    assert wrong["connect"]["error"] == "KafkaJSSASLAuthenticationError"
    assert "forbidden" not in secured.topics() and "secret" in secured.topics()


def test_authenticates_with_each_mechanism(auth_broker, caplog):
    """One node process per transport: every mechanism, then a wrong password and an expired token."""
    base = {"brokers": auth_broker.bootstrap, "ca": auth_broker.ca, "username": AUTH_USER, "password": AUTH_PASSWORD,
            "token": unsecured_token(AUTH_USER)}
    cases = [{**base, "name": m, "mechanism": m} for m in AUTH_MECHANISMS]
    cases += [{**base, "name": "wrong-password", "mechanism": "SCRAM-SHA-256", "password": "wrong"},
              {**base, "name": "expired-token", "mechanism": "OAUTHBEARER", "token": unsecured_token(AUTH_USER, lifetime=-600)}]
    r = _run(json.dumps(cases), script="auth.js")
    for m in AUTH_MECHANISMS:  # logged in as carol, who sees one topic
        assert AUTH_TOPIC in r[m].get("ok", []) and HIDDEN_TOPIC not in r[m]["ok"], (m, r[m])
    assert r["wrong-password"]["error"] == "KafkaJSSASLAuthenticationError"
    assert "wrong password for user 'carol'" in r["wrong-password"]["message"]
    # kafkajs takes the broker's RFC 7628 error challenge for success and sends Metadata instead of 0x01; the
    # broker then closes the connection, as Kafka's does ("Unexpected Kafka request ... during SASL")
    assert r["expired-token"]["error"] == "KafkaJSConnectionClosedError", r["expired-token"]
    assert "Metadata request before SASL authentication ended (SASL OAUTHBEARER exchange unfinished)" in caplog.text


def test_mutual_tls(mtls_cluster, test_certs, stranger_client_cert, caplog):
    """ssl: {ca, cert, key}: alice's certificate is her principal; no certificate, or another CA's, is refused."""
    cases = [{"name": name, "brokers": mtls_cluster.bootstrap, "ca": str(test_certs.ca), "mechanism": None,
              **({"cert": str(pair.cert), "key": str(pair.key)} if pair is not None else {})}
             for name, pair in (("alice", test_certs.clients["alice"]), ("no certificate", None),
                                ("another CA", stranger_client_cert))]
    try:
        r = _run(json.dumps(cases), script="auth.js")
    finally:
        record(CLIENT + " (mutual TLS)", mtls_cluster)
    assert r["alice"] == {"ok": ["alice-seen"]}  # ACLs name alice's certificate subject: "hidden" is not hers
    for refused in ("no certificate", "another CA"):  # the connection closed ("Closed connection"), not retried
        assert r[refused]["error"] == "KafkaJSNumberOfRetriesExceeded", (refused, r[refused])
    assert set(mtls_cluster.requests_served()) == {"kafkajs-auth"}  # alice's requests only
    if sys.version_info >= (3, 11):  # where the broker sees (and logs) the refused handshake
        assert wait_for_log(caplog, "TLS handshake refused", count=2) >= 2, caplog.text


def test_reassigns_partitions():
    """alterPartitionReassignments / listPartitionReassignments (v0 each): a reassignment to a stopped broker
    stays pending until it starts; a reordering completes at once; kafkajs raises the per-partition errors."""
    from kcodec_broker import Cluster

    with Cluster(brokers=3, system_topic_partitions=1) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic("js-moving", assignments={0: [1, 2], 1: [2, 1]}))
        c.stop_broker(3)
        bootstrap = c.bootstrap
        try:
            r = _run(bootstrap, "alter", script="reassign.js")
            assert r["connect"] == {} and r["alter"] == {}  # kafkajs resolves to nothing
            pending = {"name": "js-moving", "partitions": [
                {"partition": 0, "replicas": [3, 1, 2], "addingReplicas": [3], "removingReplicas": [2]}]}
            assert r["listAll"]["ok"] == {"topics": [pending]} and r["listNamed"]["ok"] == {"topics": [pending]}
            assert r["badBroker"]["errors"] == [["js-moving", 1, "INVALID_REPLICA_ASSIGNMENT"]]
            assert r["unknownTopic"]["errors"] == [["js-none", 0, "UNKNOWN_TOPIC_OR_PARTITION"]]
            assert c.topics()["js-moving"].replicas == [[3, 1, 2], [1, 2]]
            c.start_broker(3)
            assert _run(c.bootstrap, "list", script="reassign.js")["list"] == {"ok": {"topics": []}}
            assert c.topics()["js-moving"].replicas == [[3, 1], [1, 2]]
        finally:
            record(CLIENT, c)
        versions = c.api_versions_used()
        used = next(v for v in versions.values() if "AlterPartitionReassignments" in v)
        assert used["AlterPartitionReassignments"] == [0] and used["ListPartitionReassignments"] == [0]
