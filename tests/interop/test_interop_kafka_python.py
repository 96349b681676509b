"""kafka-python 3.0.12's KafkaAdminClient against kcodec's broker."""

from __future__ import annotations

import pytest
from needs import need_module
from interop_support import AUTH_MECHANISMS, AUTH_PASSWORD, AUTH_TOPIC, AUTH_USER, HIDDEN_TOPIC, record

from kcodec.protocol.sasl.oauthbearer import unsecured_token

pytestmark = pytest.mark.interop
kafka = need_module("kafka")
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,  # noqa: E402
                         ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic,
                         ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import (ClusterAuthorizationFailedError, InvalidReplicationFactorError,  # noqa: E402
                          InvalidTopicError, KafkaTimeoutError, NoError, TopicAlreadyExistsError,
                          TopicAuthorizationFailedError)
from kafka.net.sasl.oauth import AbstractTokenProvider  # noqa: E402

CLIENT = "kafka-python " + kafka.__version__


def _admin(bootstrap: str, **extra) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000, **extra)


def test_administer(cluster):
    admin = _admin(cluster.bootstrap)
    try:
        admin.create_topics([NewTopic("kp-explicit", 3, 2, topic_configs={"retention.ms": "1000"}),
                             NewTopic("kp-default", -1, -1)])
        topics = cluster.topics()
        assert (len(topics["kp-explicit"].replicas), topics["kp-explicit"].replication_factor) == (3, 2)
        assert (len(topics["kp-default"].replicas), topics["kp-default"].replication_factor) == (2, 2)
        assert {"kp-explicit", "kp-default", "__consumer_offsets"} <= set(admin.list_topics())
        resp = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-explicit")])
        entry = resp["topic"]["kp-explicit"]["retention.ms"]  # kafka-python shows the overrides
        assert (entry["value"], entry["config_source"]) == ("1000", "DYNAMIC_TOPIC_CONFIG")
        admin.create_partitions({"kp-explicit": NewPartitions(5)})
        assert len(cluster.topics()["kp-explicit"].replicas) == 5
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp-explicit", 1, 1)], raise_errors=True)
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic("kp-bad", 1, 7)], raise_errors=True)
        with pytest.raises(InvalidTopicError):
            admin.delete_topics(["__consumer_offsets"], raise_errors=True)
        admin.delete_topics(["kp-default"])
        assert "kp-default" not in cluster.topics() and "kp-default" not in admin.list_topics()
    finally:
        admin.close()
        record(CLIENT, cluster)


def test_create_topics_with_replica_assignments(cluster):
    """kafka-python sends the counts it is given beside an assignment: KRaft's checks, codes and messages."""
    admin = _admin(cluster.bootstrap)
    try:
        made = admin.create_topics({
            "kp-manual": {"assignments": {1: [1, 3], 0: [2, 1]}},
            "kp-counted": {"num_partitions": 2, "assignments": {0: [1], 1: [2]}},
            "kp-factor": {"replication_factor": 1, "num_partitions": 2, "assignments": {0: [1], 1: [2]}},
            "kp-gap": {"assignments": {0: [1], 2: [2]}},
            "kp-twice": {"assignments": {0: [3, 2, 3]}},
        }, raise_errors=False)
        results = {t["name"]: (t["error_code"], t["error_message"]) for t in made["topics"]}
        assert results == {
            "kp-manual": (0, None),
            "kp-counted": (42, "A manual partition assignment was specified, but numPartitions was not set to -1."),
            "kp-factor": (42, "A manual partition assignment was specified, but replication factor was not set "
                              "to -1."),
            "kp-gap": (39, "partitions should be a consecutive 0-based integer sequence"),
            "kp-twice": (39, "The manual partition assignment includes the broker 3 more than once."),
        }
        assert cluster.topics()["kp-manual"].replicas == [[2, 1], [1, 3]]
        assert not {"kp-counted", "kp-factor", "kp-gap", "kp-twice"} & set(cluster.topics())
    finally:
        admin.close()
        record(CLIENT, cluster)


def test_describe_log_dirs(cluster):
    """kafka-log-dirs.sh's question through kafka-python: every broker's partitions, with their sizes."""
    cluster.create_topic("kp-dirs", 2, 2)
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap)
    producer.send("kp-dirs", b"x" * 500, partition=1).get(timeout=10)
    producer.close()
    admin = _admin(cluster.bootstrap)
    try:
        found: dict[int, dict[int, int]] = {}
        for per_broker in admin.describe_log_dirs():
            [log_dir] = per_broker["log_dirs"]
            assert log_dir["error_code"] == 0
            for topic in log_dir["topics"]:
                if topic["name"] == "kp-dirs":
                    found[per_broker["broker"]] = {p["partition_index"]: p["partition_size"]
                                                   for p in topic["partitions"]}
        replicas = cluster.topics()["kp-dirs"].replicas  # each broker names the partitions it holds
        assert {node: set(sizes) for node, sizes in found.items()} == {
            node: {i for i, r in enumerate(replicas) if node in r} for node in {n for r in replicas for n in r}}
        for sizes in found.values():  # the 500-byte record's batch in partition 1, nothing in partition 0
            assert sizes.get(0, 0) == 0 and (1 not in sizes or sizes[1] > 500)
    finally:
        admin.close()
        record(CLIENT, cluster)


def test_unauthorized_under_sasl_plain(secured):
    admin = _admin(secured.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                   sasl_plain_username="alice", sasl_plain_password="alice-pw")
    try:
        assert "secret" in admin.list_topics()
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([NewTopic("forbidden", 1, 1)], raise_errors=True)
        with pytest.raises(TopicAuthorizationFailedError):
            admin.delete_topics(["secret"], raise_errors=True)
        assert "forbidden" not in secured.topics() and "secret" in secured.topics()
    finally:
        admin.close()
        record(CLIENT + " (SASL PLAIN)", secured)


def test_create_and_delete_acls_enforced_for_another_principal(secured):
    def admin_as(user: str) -> KafkaAdminClient:
        return _admin(secured.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                      sasl_plain_username=user, sasl_plain_password=f"{user}-pw")
    admin, alice = admin_as("admin"), admin_as("alice")
    deny = ACL("User:alice", "*", ACLOperation.DESCRIBE, ACLPermissionType.DENY,
               ResourcePattern(ResourceType.TOPIC, "secret", ACLResourcePatternType.LITERAL))
    denials = ACLFilter("User:alice", None, ACLOperation.ANY, ACLPermissionType.DENY,
                        ResourcePatternFilter(ResourceType.TOPIC, "secret", ACLResourcePatternType.MATCH))
    try:
        assert "secret" in alice.list_topics()
        assert alice.create_acls([deny])["failed"] == [ClusterAuthorizationFailedError]
        assert admin.create_acls([deny]) == {"succeeded": [deny], "failed": []}
        assert admin.describe_acls(denials) == ([deny], NoError)
        assert "secret" not in alice.list_topics()  # the DENY wins over Describe on *
        [(_, deleted, error)] = admin.delete_acls([denials])
        assert (deleted, error) == ([deny], NoError)
        assert "secret" in alice.list_topics()
    finally:
        admin.close()
        alice.close()
        record(CLIENT + " (SASL PLAIN)", secured)


class _UnsecuredToken(AbstractTokenProvider):
    def token(self) -> str:
        return unsecured_token(AUTH_USER)


def _auth_config(broker, mechanism: str, password: str = AUTH_PASSWORD) -> dict:
    config = broker.kafka_python_style(mechanism, password, _UnsecuredToken())
    if broker.tls:
        config.update(ssl_cafile=broker.ca, ssl_check_hostname=True)
    return config


@pytest.mark.parametrize("mechanism", AUTH_MECHANISMS)
def test_authenticates(auth_broker, mechanism):
    admin = _admin(auth_broker.bootstrap, **_auth_config(auth_broker, mechanism))
    try:
        listed = set(admin.list_topics())
    finally:
        admin.close()
    assert AUTH_TOPIC in listed and HIDDEN_TOPIC not in listed  # logged in as carol, who sees one topic


def test_wrong_password_is_refused(auth_broker, caplog):
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):  # kafka-python retries until its deadline
        _admin(auth_broker.bootstrap, bootstrap_timeout_ms=1500, **_auth_config(auth_broker, "SCRAM-SHA-256", "wrong"))
    assert "wrong password for user 'carol'" in caplog.text  # each attempt logged the broker's reason


def test_mutual_tls_client_certificate_is_the_principal(mtls_cluster, test_certs):
    alice = test_certs.clients["alice"]
    admin = _admin(mtls_cluster.bootstrap, security_protocol="SSL", ssl_cafile=str(test_certs.ca),
                   ssl_certfile=str(alice.cert), ssl_keyfile=str(alice.key), ssl_check_hostname=True)
    try:
        assert set(admin.list_topics()) == {"alice-seen"}  # ACLs name alice's certificate subject
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([NewTopic("other", 1, 1)], raise_errors=True)
    finally:
        admin.close()
        record(CLIENT + " (mutual TLS)", mtls_cluster)


def test_partition_reassignments():
    """alter_partition_reassignments (v1 with kafka-python's default: the replication factor may change) and
    list_partition_reassignments: pending while the target broker is stopped, then cancelled, then done."""
    from kafka import TopicPartition
    from kcodec_broker import Cluster

    with Cluster(brokers=3, system_topic_partitions=1) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic("kp-moving", assignments={0: [1, 2], 1: [2, 1]}))
        c.stop_broker(3)
        admin = _admin(c.bootstrap)
        tp0, tp1 = TopicPartition("kp-moving", 0), TopicPartition("kp-moving", 1)
        try:
            done = admin.alter_partition_reassignments({tp0: [3, 2], tp1: [1, 2, 3]})
            assert done == {tp0: None, tp1: None}
            assert admin.list_partition_reassignments() == {
                tp0: {"replicas": [3, 2, 1], "adding_replicas": [3], "removing_replicas": [1]},
                tp1: {"replicas": [1, 2, 3], "adding_replicas": [3], "removing_replicas": []}}
            assert admin.list_partition_reassignments([tp1]) == {
                tp1: {"replicas": [1, 2, 3], "adding_replicas": [3], "removing_replicas": []}}
            errors = admin.alter_partition_reassignments({tp1: None, TopicPartition("kp-moving", 7): [1]})
            assert errors == {tp1: None, TopicPartition("kp-moving", 7): kafka.errors.UnknownTopicOrPartitionError}
            again = admin.alter_partition_reassignments({tp1: None})
            assert again == {tp1: kafka.errors.NoReassignmentInProgressError}
            c.start_broker(3)
            assert admin.list_partition_reassignments() == {}
            # the cancelled one keeps its replicas less the added one, in the target's order (as Kafka's revert)
            assert c.topics()["kp-moving"].replicas == [[3, 2], [1, 2]]
        finally:
            admin.close()
            record(CLIENT, c)
        used = next(v for v in c.api_versions_used().values() if "AlterPartitionReassignments" in v)
        assert used["AlterPartitionReassignments"] == [1] and used["ListPartitionReassignments"] == [0]


def test_describe_metadata_quorum():
    from kcodec_broker import Cluster

    with Cluster(brokers=2, system_topic_partitions=1) as c:
        admin = _admin(c.bootstrap)
        try:
            q = admin.describe_metadata_quorum()
        finally:
            admin.close()
            record(CLIENT, c)
        used = next(v for v in c.api_versions_used().values() if "DescribeQuorum" in v)
        assert used["DescribeQuorum"] == [2]
        p = q["topics"][0]["partitions"][0]
        assert q["topics"][0]["topic_name"] == "__cluster_metadata" and p["error"] is None
        assert (p["leader_id"], p["leader_epoch"]) == (c.controller_id, 1) and p["observers"] == []
        assert [(v["replica_id"], v["log_end_offset"]) for v in p["current_voters"]] == [
            (1, p["high_watermark"]), (2, p["high_watermark"])]
        assert [n["node_id"] for n in q["nodes"]] == [1, 2]  # v2 (KIP-853): each voter's endpoints
        assert [lst["port"] for n in q["nodes"] for lst in n["listeners"]] == [s.port for s in c.servers]


def test_list_config_resources():
    from kcodec_broker import Cluster

    with Cluster(brokers=2, system_topic_partitions=1) as c:
        c.create_topic("kp-configured")
        admin = _admin(c.bootstrap)
        try:
            every = admin.list_config_resources()
            topics = admin.list_config_resources(["TOPIC"])
            with pytest.raises(kafka.errors.UnsupportedVersionError):
                admin.list_config_resources([ConfigResourceType.UNKNOWN])  # 0: not a config resource type
        finally:
            admin.close()
            record(CLIENT, c)
        used = next(v for v in c.api_versions_used().values() if "ListConfigResources" in v)
        assert used["ListConfigResources"] == [1]
    assert every == {"topic": ["__consumer_offsets", "__transaction_state", "kp-configured"],
                     "broker": ["1", "2"], "broker_logger": ["1", "2"]}
    assert topics == {"topic": ["__consumer_offsets", "__transaction_state", "kp-configured"]}
