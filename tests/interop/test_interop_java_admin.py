"""Kafka's Java admin client 4.4 administers kcodec broker: topics (explicit and KIP-464 defaults, configs
returned at creation, validate-only, partitions, configs, deletion and the errors), ACLs, consumer groups and
their offsets, partition offsets, transactions and producers, the cluster, features, log directories and
client quotas."""

from __future__ import annotations

from typing import Iterator

import pytest
from interop_support import record
from java_clients import CLIENT

from kcodec.broker import Cluster

pytestmark = [pytest.mark.interop, pytest.mark.checkout]
ADMIN = CLIENT + " (admin)"


@pytest.fixture
def brokers() -> Iterator[Cluster]:
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5) as c:
        try:
            yield c
        finally:
            record(ADMIN, c)


def test_topics(java, brokers):
    r = java.call("admin_topics", bootstrap=brokers.bootstrap, prefix="j-")
    assert r["created"] == [3, 1, 2, 2]  # explicit; num.partitions and default.replication.factor for -1
    assert r["created_config"] == "3600000"  # CreateTopics v5+ returns the configs
    assert r["exists"]["error"] == "TopicExistsException"
    assert r["bad_replication"]["error"] == "InvalidReplicationFactorException"
    assert r["bad_partitions"]["error"] == "InvalidPartitionsException"
    assert r["validate_only"] == {"ok": None} and "j-dry" not in brokers.topics()
    assert r["listed"] == ["j-defaults", "j-explicit"] and r["internal_listed"] is True
    name, internal, partitions = r["described"]
    assert (name, internal, len(partitions)) == ("j-explicit", False, 3)
    topic = brokers.topics()["j-explicit"]
    assert [[p, replicas[0], replicas, replicas] for p, replicas in enumerate(topic.replicas[:3])] == partitions
    assert r["describe_missing"]["error"] == "UnknownTopicOrPartitionException"
    assert r["after_create_partitions"] == 5 and len(topic.replicas) == 5
    assert r["decrease_partitions"]["error"] == "InvalidPartitionsException"
    assert r["configs"] == [["cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"],
                            ["retention.ms", "604800000", "DEFAULT_CONFIG"]]  # deleted: back to the default
    assert r["bad_config"]["error"] == "InvalidConfigurationException"
    assert r["broker_num_partitions"] == ["num.partitions", "2", "STATIC_BROKER_CONFIG"]
    assert r["delete_missing"]["error"] == "UnknownTopicOrPartitionException"
    assert r["delete_internal"]["error"] == "InvalidTopicException"
    assert r["listed_after_delete"] == ["j-explicit"]


@pytest.fixture
def authorizing() -> Iterator[Cluster]:
    """An authorizer on (no ACLs at first); the anonymous PLAINTEXT principal is a super user."""
    with Cluster(brokers=1, acls=[], super_users=["ANONYMOUS"], system_topic_partitions=1) as c:
        try:
            yield c
        finally:
            record(ADMIN, c)


def test_acls(java, authorizing):
    r = java.call("admin_acls", bootstrap=authorizing.bootstrap)
    alice_reads = "TOPIC orders LITERAL User:alice * READ ALLOW"
    alice_groups = "GROUP app- PREFIXED User:alice * READ ALLOW"
    bob_denied = "TOPIC orders LITERAL User:bob * WRITE DENY"
    assert r["all"] == [alice_groups, alice_reads, bob_denied]
    assert r["orders"] == [alice_reads, bob_denied]  # MATCH: the ACLs that apply to the topic
    assert r["deleted"] == [bob_denied] and r["after_delete"] == [alice_groups, alice_reads]
    assert r["bad_principal"]["error"] == "InvalidRequestException"
    with authorizing.state.lock:
        assert authorizing.runtime.authorizer.allowed("User:alice", "Read", "topic", "orders")
        assert authorizing.runtime.authorizer.allowed("User:alice", "Read", "group", "app-1")
        assert not authorizing.runtime.authorizer.allowed("User:alice", "Write", "topic", "orders")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_groups_and_offsets(java, brokers, protocol):
    brokers.create_topic("j-groups", 3, 2)
    group = f"j-group-{protocol}"
    r = java.call("admin_groups", bootstrap=brokers.bootstrap, topic="j-groups", group=group, protocol=protocol)
    kind = "Classic" if protocol == "classic" else "Consumer"
    assert r["listed"] == [group, kind, "consumer", "Stable"]  # the protocol type, "consumer" for both kinds
    state, described_kind, members, has_coordinator, simple = r["described"]
    assert (state, described_kind, has_coordinator, simple) == ("Stable", kind, True, False)
    assert len(members) == 1 and members[0][1] == ["j-groups-0", "j-groups-1", "j-groups-2"]
    assert r["delete_active"]["error"] == "GroupNotEmptyException"
    assert r["offsets"] == {f"j-groups-{p}": [2, ""] for p in range(3)}
    assert r["offsets_altered"] == {"j-groups-0": [0, "reset"], "j-groups-2": [2, ""]}
    # partition 0 holds records 0 and 3 (timestamps base + 0 s and + 3 s): earliest, latest, the newest
    # record's offset and time, the first at or after base + 1 s
    assert r["list_offsets"] == [0, 2, [1, 1_700_000_003_000], 1]
    assert r["listed_after_delete"] is None
    assert r["describe_deleted"]["error"] == "GroupIdNotFoundException"  # KIP-1043 (Kafka 4.0)


def test_transactions_and_producers(java, brokers):
    brokers.create_topic("j-txn", 1, 2)
    r = java.call("admin_transactions", bootstrap=brokers.bootstrap, topic="j-txn", transactional_id="j-txn-id")
    assert r["open_listed"] == ["j-txn-id", True, "Ongoing"]
    assert r["open_described"] == ["Ongoing", ["j-txn-0"], True, 60000, True]
    assert r["producers"] == [[True, 0, 0]]  # the transaction's producer, its first sequence, where it began
    assert r["committed_listed"] == ["j-txn-id", True, "CompleteCommit"]
    assert r["describe_unknown"]["error"] == "TransactionalIdNotFoundException"


def test_cluster_features_log_dirs_and_quotas(java, brokers):
    r = java.call("admin_cluster", bootstrap=brokers.bootstrap)
    assert r["nodes"] == [1, 2, 3] and r["controller"] == brokers.state.controller_id
    assert r["cluster_id"] == brokers.state.cluster_id
    assert r["finalized_features"]["transaction.version"] == 2
    assert r["log_dirs"] == {"1": ["memory"], "2": ["memory"], "3": ["memory"]}
    assert r["quotas"] == {"{user=alice}": {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}
    assert r["bad_quota"] == {"error": "InvalidRequestException",
                              "message": "Configuration producer_byte_rate must be a Long value"}
