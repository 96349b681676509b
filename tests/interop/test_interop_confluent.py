"""confluent-kafka 2.16.1 (librdkafka)'s AdminClient against kcodec's broker."""

from __future__ import annotations

import time

import pytest
from needs import need_module
from interop_support import AUTH_MECHANISMS, AUTH_PASSWORD, AUTH_TOPIC, AUTH_USER, HIDDEN_TOPIC, record

from kcodec.errors import ErrorCode

pytestmark = pytest.mark.interop
ck = need_module("confluent_kafka")
from confluent_kafka import KafkaError, KafkaException  # noqa: E402
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,  # noqa: E402
                                   AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
                                   NewTopic, ResourcePatternType, ResourceType)

CLIENT = f"confluent-kafka {ck.__version__} (librdkafka {ck.libversion()[0]})"
TIMEOUT = 15


def _one(futures: dict):
    [f] = futures.values()
    return f.result(timeout=TIMEOUT)


def _error(futures: dict) -> int:
    with pytest.raises(KafkaException) as e:
        _one(futures)
    return e.value.args[0].code()


def _admin(bootstrap: str, **extra) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **extra})


def test_administer(cluster):
    admin = _admin(cluster.bootstrap)
    try:
        for f in admin.create_topics([NewTopic("ck-explicit", 3, 2, config={"cleanup.policy": "compact"}),
                                      NewTopic("ck-default")], request_timeout=TIMEOUT).values():
            assert f.result(timeout=TIMEOUT) is None
        topics = cluster.topics()
        assert (len(topics["ck-explicit"].replicas), topics["ck-explicit"].replication_factor) == (3, 2)
        assert (len(topics["ck-default"].replicas), topics["ck-default"].replication_factor) == (2, 2)
        listed = admin.list_topics(timeout=TIMEOUT).topics
        assert {"ck-explicit", "ck-default", "__consumer_offsets"} <= set(listed)
        configs = _one(admin.describe_configs([ConfigResource("topic", "ck-explicit")]))
        assert configs["cleanup.policy"].value == "compact" and configs["retention.ms"].value == "604800000"
        assert configs["retention.ms"].is_default and not configs["cleanup.policy"].is_default
        _one(admin.create_partitions([NewPartitions("ck-explicit", 5)]))
        assert len(cluster.topics()["ck-explicit"].replicas) == 5
        _one(admin.incremental_alter_configs([ConfigResource("topic", "ck-explicit", incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])]))
        assert cluster.topics()["ck-explicit"].configs["retention.ms"] == "1000"
        assert _error(admin.create_topics([NewTopic("ck-explicit", 1, 1)])) == KafkaError.TOPIC_ALREADY_EXISTS
        assert _error(admin.create_topics([NewTopic("ck-bad", 1, 9)])) == KafkaError.INVALID_REPLICATION_FACTOR
        assert _error(admin.delete_topics(["__consumer_offsets"], operation_timeout=5)) == KafkaError.TOPIC_EXCEPTION
        _one(admin.delete_topics(["ck-default"], operation_timeout=5))
        assert "ck-default" not in cluster.topics()
        assert "ck-default" not in admin.list_topics(timeout=TIMEOUT).topics
    finally:
        record(CLIENT, cluster)


def _failure(futures: dict) -> tuple[int, str]:
    with pytest.raises(KafkaException) as e:
        _one(futures)
    return e.value.args[0].code(), e.value.args[0].str()


def test_create_topics_with_replica_assignments(cluster):
    """librdkafka sends a replica assignment with -1 partitions and replication factor: created as given,
    or refused with KRaft's code and message (ReplicationControlManager.createTopic)."""
    admin = _admin(cluster.bootstrap)
    try:
        assert _one(admin.create_topics([NewTopic("ck-manual", 2, replica_assignment=[[2, 1], [1, 3]])],
                                        request_timeout=TIMEOUT)) is None
        assert cluster.topics()["ck-manual"].replicas == [[2, 1], [1, 3]]
        bad = KafkaError.INVALID_REPLICA_ASSIGNMENT
        assert _failure(admin.create_topics([NewTopic("ck-m2", 2, replica_assignment=[[1, 2], [3]])])) == (
            bad, "The manual partition assignment includes a partition with 1 replica(s), but this is not "
            "consistent with previous partitions, which have 2 replica(s).")
        assert _failure(admin.create_topics([NewTopic("ck-m2", 1, replica_assignment=[[9, 1, 7]])])) == (
            bad, "The manual partition assignment includes broker 7, but no such broker is registered.")
        assert _failure(admin.create_topics([NewTopic("ck-m2", 1, replica_assignment=[[1, 2, 1]])])) == (
            bad, "The manual partition assignment includes the broker 1 more than once.")
        cluster.stop_broker(3)
        assert _failure(admin.create_topics([NewTopic("ck-m2", 2, replica_assignment=[[1], [3]])])) == (
            bad, "All brokers specified in the manual partition assignment for partition 1 are fenced or in "
            "controlled shutdown.")
        assert "ck-m2" not in cluster.topics()
    finally:
        record(CLIENT, cluster)


def test_unauthorized_under_sasl_plain(secured):
    admin = _admin(secured.bootstrap, **{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                         "sasl.username": "alice", "sasl.password": "alice-pw"})
    try:
        assert "secret" in admin.list_topics(timeout=TIMEOUT).topics
        assert _error(admin.create_topics([NewTopic("forbidden", 1, 1)])) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert _error(admin.delete_topics(["secret"], operation_timeout=5)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert "forbidden" not in secured.topics() and "secret" in secured.topics()
    finally:
        record(CLIENT + " (SASL PLAIN)", secured)


def test_create_describe_delete_acls_enforced_for_another_principal(secured):
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    admin = _admin(secured.bootstrap, **sasl, **{"sasl.username": "admin", "sasl.password": "admin-pw"})
    alice = _admin(secured.bootstrap, **sasl, **{"sasl.username": "alice", "sasl.password": "alice-pw"})
    deny = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.DESCRIBE, AclPermissionType.DENY)
    create = AclBinding(ResourceType.TOPIC, "ck-", ResourcePatternType.PREFIXED, "User:alice", "*",
                        AclOperation.CREATE, AclPermissionType.ALLOW)
    alice_acls = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    try:
        assert "secret" in alice.list_topics(timeout=TIMEOUT).topics
        assert _error(alice.create_acls([deny], request_timeout=TIMEOUT)) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        for f in admin.create_acls([deny, create], request_timeout=TIMEOUT).values():
            assert f.result(timeout=TIMEOUT) is None
        assert {deny, create} <= set(admin.describe_acls(alice_acls, request_timeout=TIMEOUT).result(timeout=TIMEOUT))
        assert "secret" not in alice.list_topics(timeout=TIMEOUT).topics  # the DENY wins over Describe on *
        assert _one(alice.create_topics([NewTopic("ck-alice", 1, 1)], request_timeout=TIMEOUT)) is None
        deleted = _one(admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.MATCH,
                                                           "User:alice", None, AclOperation.ANY,
                                                           AclPermissionType.DENY)], request_timeout=TIMEOUT))
        assert deleted == [deny]
        assert "secret" in alice.list_topics(timeout=TIMEOUT).topics
        assert _one(admin.delete_acls([alice_acls], request_timeout=TIMEOUT)) != []  # the rest of hers
        assert "secret" not in alice.list_topics(timeout=TIMEOUT).topics
    finally:
        record(CLIENT + " (SASL PLAIN)", secured)


def _auth_config(broker, mechanism: str, password: str = AUTH_PASSWORD) -> dict:
    config = {"security.protocol": broker.protocol, "sasl.mechanism": mechanism}
    if mechanism == "OAUTHBEARER":  # librdkafka's built-in unsecured JWT, subject carol
        config.update({"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": f"principal={AUTH_USER}"})
    else:
        config.update({"sasl.username": AUTH_USER, "sasl.password": password})
    if broker.tls:
        config["ssl.ca.location"] = broker.ca  # host names checked (librdkafka's default since 2.0)
    return config


@pytest.mark.parametrize("mechanism", AUTH_MECHANISMS)
def test_authenticates(auth_broker, mechanism):
    admin = _admin(auth_broker.bootstrap, **_auth_config(auth_broker, mechanism))
    listed = set(admin.list_topics(timeout=TIMEOUT).topics)
    assert AUTH_TOPIC in listed and HIDDEN_TOPIC not in listed  # logged in as carol, who sees one topic


def test_wrong_password_is_refused(auth_broker):
    errors: list = []
    admin = _admin(auth_broker.bootstrap, error_cb=errors.append,
                   **_auth_config(auth_broker, "SCRAM-SHA-512", "wrong"))
    deadline = time.monotonic() + TIMEOUT
    while not errors and time.monotonic() < deadline:
        admin.poll(0.1)  # serves error_cb
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "wrong password for user 'carol'" in errors[0].str()  # the broker's reason reaches the client


def _ssl_config(ca, pair=None) -> dict:
    config = {"security.protocol": "SSL", "ssl.ca.location": str(ca)}
    if pair is not None:
        config.update({"ssl.certificate.location": str(pair.cert), "ssl.key.location": str(pair.key)})
    return config


def test_mutual_tls_client_certificate_is_the_principal(mtls_cluster, test_certs):
    admin = _admin(mtls_cluster.bootstrap, **_ssl_config(test_certs.ca, test_certs.clients["alice"]))
    try:
        assert "alice-seen" in admin.list_topics(timeout=TIMEOUT).topics
        assert "hidden" not in admin.list_topics(timeout=TIMEOUT).topics  # ACLs apply to alice's DN
        assert _one(admin.create_topics([NewTopic("alice-new", 1, 1)], request_timeout=TIMEOUT)) is None
        assert _error(admin.create_topics([NewTopic("other", 1, 1)])) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert "alice-new" in mtls_cluster.topics() and "other" not in mtls_cluster.topics()
    finally:
        record(CLIENT + " (mutual TLS)", mtls_cluster)


def test_mutual_tls_producer(mtls_cluster, test_certs):
    errors: list = []
    producer = ck.Producer({"bootstrap.servers": mtls_cluster.bootstrap, "log_level": 2, "acks": "all",
                            **_ssl_config(test_certs.ca, test_certs.clients["alice"])})
    for value in (b"one", b"two"):
        producer.produce("alice-seen", value, partition=0, on_delivery=lambda e, _m: e and errors.append(e))
    producer.produce("hidden", b"no", partition=0, on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(TIMEOUT) == 0
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]  # alice may not write there
    topics = mtls_cluster.topics()
    with mtls_cluster.state.lock:
        assert mtls_cluster.state.logs.bounds(topics["alice-seen"].topic_id, 0) == (0, 2)
        assert mtls_cluster.state.logs.bounds(topics["hidden"].topic_id, 0) == (0, 0)


def test_injected_produce_errors_are_retried(cluster):
    """fail_next on Produce reaches librdkafka's Produce v10+ (whose answers also carry node_endpoints):
    NOT_LEADER_OR_FOLLOWER twice, then the record is written once."""
    cluster.create_topic("retried", 1)
    injected = cluster.fail_next("Produce", ErrorCode.NOT_LEADER_OR_FOLLOWER, times=2)
    delivered: list = []
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "log_level": 2, "acks": "all"})
    producer.produce("retried", b"v", partition=0, on_delivery=lambda e, m: delivered.append((e, m.offset())))
    assert producer.flush(TIMEOUT) == 0
    assert delivered == [(None, 0)] and injected.taken == 2
    assert max(v for per_client in cluster.api_versions_used().values() for v in per_client.get("Produce", [])) >= 10
    with cluster.state.lock:
        assert cluster.state.logs.bounds(cluster.topics()["retried"].topic_id, 0) == (0, 1)


@pytest.mark.parametrize("who", ["no certificate", "another CA"])
def test_mutual_tls_refuses_other_clients(mtls_cluster, test_certs, stranger_client_cert, who):
    errors: list = []
    pair = stranger_client_cert if who == "another CA" else None
    client_id = f"mtls-{who.replace(' ', '-')}"
    admin = _admin(mtls_cluster.bootstrap, error_cb=errors.append, **{"client.id": client_id},
                   **_ssl_config(test_certs.ca, pair))
    deadline = time.monotonic() + TIMEOUT
    while not errors and time.monotonic() < deadline:
        admin.poll(0.1)  # serves error_cb
    assert errors and errors[0].code() in (KafkaError._TRANSPORT, KafkaError._SSL, KafkaError._ALL_BROKERS_DOWN)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)
    assert client_id not in mtls_cluster.requests_served()  # not one request got past the handshake


def test_listeners_each_client_follows_its_own(test_certs):
    """Three brokers with a PLAINTEXT and a SASL_SSL listener (Kafka's ``listeners``): a producer on the
    SASL_SSL one and a consumer on the PLAINTEXT one reach every partition leader through the endpoints
    Metadata gives for their own listener (a TLS client told a plaintext port could not connect)."""
    from kcodec_broker import Cluster, Listener

    with Cluster(3, users={AUTH_USER: AUTH_PASSWORD}, tls=(test_certs.cert, test_certs.key), system_topic_partitions=1,
                 listeners=[Listener("PLAINTEXT"), Listener("EXTERNAL", "SASL_SSL")]) as cluster:
        cluster.create_topic("spread", 3, 1)
        secure = {"bootstrap.servers": cluster.bootstrap_for("EXTERNAL").split(",")[0], "security.protocol": "SASL_SSL",
                  "ssl.ca.location": str(test_certs.ca), "sasl.mechanism": "SCRAM-SHA-256",
                  "sasl.username": AUTH_USER, "sasl.password": AUTH_PASSWORD}
        producer = ck.Producer({**secure, "log_level": 2, "acks": "all"})
        for p in range(3):
            producer.produce("spread", b"to-%d" % p, partition=p)
        assert producer.flush(TIMEOUT) == 0
        consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap.split(",")[0], "group.id": "listeners",
                                "log_level": 2})
        try:
            consumer.assign([ck.TopicPartition("spread", p, 0) for p in range(3)])
            got: list = []
            deadline = time.monotonic() + TIMEOUT
            while len(got) < 3 and time.monotonic() < deadline:
                got += [m.value() for m in consumer.consume(3, 0.5) if not m.error()]
        finally:
            consumer.close()
        assert sorted(got) == [b"to-0", b"to-1", b"to-2"]
        leaders = {cluster.topics()["spread"].replicas[p][0] for p in range(3)}
        assert len(leaders) == 3  # the partitions' leaders are three brokers: both clients reached each one
