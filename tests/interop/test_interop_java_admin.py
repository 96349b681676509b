"""Kafka's Java admin client 4.4 administers kcodec broker: topics (explicit and KIP-464 defaults, configs
returned at creation, validate-only, partitions, configs, deletion and the errors), ACLs, consumer groups and
their offsets, partition offsets, transactions and producers, the cluster, features, log directories and
client quotas. The same scenarios run against Apache Kafka 4.4 (the session's real_kafka; marker slow), whose
broker defaults differ from the kcodec cluster's (num.partitions, default.replication.factor: 1 there)."""

from __future__ import annotations

from typing import Iterator

import pytest
from interop_support import record
from java_clients import CLIENT, SESSION, Target

from kcodec_broker import Cluster

pytestmark = [pytest.mark.interop, pytest.mark.checkout]
ADMIN = CLIENT + " (admin)"


# Against Apache Kafka too (slow: about a minute more; `pytest -m slow tests/interop/test_interop_java*.py`)
@pytest.fixture(params=["kcodec", pytest.param("kafka", marks=pytest.mark.slow)])
def target(request, java) -> Iterator[Target]:
    """kcodec broker: three brokers, num.partitions and default.replication.factor 2, an authorizer with
    the anonymous PLAINTEXT principal a super user (as the real Kafka's PLAINTEXT listener is); or Kafka."""
    if request.param == "kafka":
        yield Target("kafka", request.getfixturevalue("real_kafka").bootstrap, java, prefix=f"a{SESSION}-")
        return
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5,
                 acls=[], super_users=["ANONYMOUS"]) as c:
        try:
            yield Target("kcodec", c.bootstrap, java, cluster=c, prefix="j-")
        finally:
            record(ADMIN, c)


def test_topics(java, target):
    x = target.prefix
    defaults = (2, 2) if target.kind == "kcodec" else (1, 1)  # num.partitions, default.replication.factor
    r = java.call("admin_topics", bootstrap=target.bootstrap, prefix=x, delete_internal=target.kind == "kcodec")
    assert r["created"] == [3, 1, *defaults]  # explicit; the broker's defaults for -1 (KIP-464)
    assert r["created_config"] == "3600000"  # CreateTopics v5+ returns the configs
    assert r["exists"]["error"] == "TopicExistsException"
    assert r["bad_replication"]["error"] == "InvalidReplicationFactorException"
    assert r["bad_partitions"]["error"] == "InvalidPartitionsException"
    assert r["validate_only"] == {"ok": None}
    assert [t for t in r["listed"] if t.startswith(x)] == [x + "defaults", x + "explicit"]
    assert r["internal_listed"] is True and "__consumer_offsets" not in r["listed"]
    name, internal, partitions = r["described"]
    assert (name, internal, len(partitions)) == (x + "explicit", False, 3)
    assert all(leader == replicas[0] and replicas == isr and len(replicas) == 1
               for _, leader, replicas, isr in partitions)
    assert r["describe_missing"]["error"] == "UnknownTopicOrPartitionException"
    assert r["after_create_partitions"] == 5
    assert r["decrease_partitions"]["error"] == "InvalidPartitionsException"
    assert r["configs"] == [["cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"],
                            ["retention.ms", "604800000", "DEFAULT_CONFIG"]]  # deleted: back to the default
    assert r["bad_config"]["error"] == "InvalidConfigurationException"
    assert r["broker_num_partitions"] == (["num.partitions", "2", "STATIC_BROKER_CONFIG"] if target.kind == "kcodec"
                                          else ["num.partitions", "1", "DEFAULT_CONFIG"])
    assert r["delete_missing"]["error"] == "UnknownTopicOrPartitionException"
    if target.kind == "kcodec":  # the seed's KIP-619 (tests/kafka/accepted-differences.json): Kafka deletes it
        assert r["delete_internal"]["error"] == "InvalidTopicException"
    assert [t for t in r["listed_after_delete"] if t.startswith(x)] == [x + "explicit"]
    if target.cluster is not None:
        topic = target.cluster.topics()[x + "explicit"]
        assert [[p, replicas[0], replicas, replicas] for p, replicas in enumerate(topic.replicas[:3])] == partitions
        assert len(topic.replicas) == 5 and x + "dry" not in target.cluster.topics()


def test_acls(java, target):
    x = target.prefix
    r = java.call("admin_acls", bootstrap=target.bootstrap, prefix=x)
    alice_reads = f"TOPIC {x}orders LITERAL User:{x}alice * READ ALLOW"
    alice_groups = f"GROUP {x}app- PREFIXED User:{x}alice * READ ALLOW"
    bob_denied = f"TOPIC {x}orders LITERAL User:{x}bob * WRITE DENY"
    mine = lambda bindings: [b for b in bindings if f"User:{x}" in b]  # noqa: E731 - the real Kafka is shared
    assert mine(r["all"]) == [alice_groups, alice_reads, bob_denied]
    assert mine(r["orders"]) == [alice_reads, bob_denied]  # MATCH: the ACLs that apply to the topic
    assert r["deleted"] == [bob_denied] and mine(r["after_delete"]) == [alice_groups, alice_reads]
    assert r["bad_principal"]["error"] == "InvalidRequestException"
    if target.cluster is not None:
        with target.cluster.state.lock:
            authorizer = target.cluster.runtime.authorizer
            assert authorizer.allowed(f"User:{x}alice", "Read", "topic", f"{x}orders")
            assert authorizer.allowed(f"User:{x}alice", "Read", "group", f"{x}app-1")
            assert not authorizer.allowed(f"User:{x}alice", "Write", "topic", f"{x}orders")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_groups_and_offsets(java, target, protocol):
    topic = target.create_topic(f"groups-{protocol}", 3, 2)
    group = target.name(f"group-{protocol}")
    r = java.call("admin_groups", bootstrap=target.bootstrap, topic=topic, group=group, protocol=protocol)
    kind = "Classic" if protocol == "classic" else "Consumer"
    assert r["listed"] == [group, kind, "consumer", "Stable"]  # the protocol type, "consumer" for both kinds
    state, described_kind, members, has_coordinator, simple = r["described"]
    assert (state, described_kind, has_coordinator, simple) == ("Stable", kind, True, False)
    assert len(members) == 1 and members[0][1] == [f"{topic}-0", f"{topic}-1", f"{topic}-2"]
    assert r["delete_active"]["error"] == "GroupNotEmptyException"
    assert r["offsets"] == {f"{topic}-{p}": [2, ""] for p in range(3)}
    assert r["offsets_altered"] == {f"{topic}-0": [0, "reset"], f"{topic}-2": [2, ""]}
    # partition 0 holds records 0 and 3 (timestamps base + 0 s and + 3 s): earliest, latest, the newest
    # record's offset and time, the first at or after base + 1 s
    assert r["list_offsets"] == [0, 2, [1, 1_700_000_003_000], 1]
    assert r["listed_after_delete"] is None
    assert r["describe_deleted"]["error"] == "GroupIdNotFoundException"  # KIP-1043 (Kafka 4.0)


def test_transactions_and_producers(java, target):
    topic = target.create_topic("txn", 1, 2)
    tid = target.name("txn-id")
    r = java.call("admin_transactions", bootstrap=target.bootstrap, topic=topic, transactional_id=tid)
    assert r["open_listed"] == [tid, True, "Ongoing"]
    assert r["open_described"] == ["Ongoing", [f"{topic}-0"], True, 60000, True]
    assert r["producers"] == [[True, 0, 0]]  # the transaction's producer, its first sequence, where it began
    assert r["just_committed"] in ("PrepareCommit", "CompleteCommit")  # Kafka: until the markers are written
    assert r["committed_listed"] == [tid, True, "CompleteCommit"]
    assert r["describe_unknown"]["error"] == "TransactionalIdNotFoundException"


def test_cluster_features_log_dirs_and_quotas(java, target):
    x = target.prefix
    r = java.call("admin_cluster", bootstrap=target.bootstrap, prefix=x)
    assert r["finalized_features"]["transaction.version"] == 2
    assert r["controller"] in r["nodes"] and all(len(dirs) == 1 for dirs in r["log_dirs"].values())
    assert sorted(r["log_dirs"]) == sorted(str(n) for n in r["nodes"])
    assert r["quotas"] == {
        f"{{user={x}alice}}": {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}
    assert r["bad_quota"] == {"error": "InvalidRequestException",
                              "message": "producer_byte_rate cannot be a fractional value."}
    if target.cluster is not None:
        assert r["nodes"] == [1, 2, 3] and r["controller"] == target.cluster.state.controller_id
        assert r["cluster_id"] == target.cluster.state.cluster_id
        assert r["log_dirs"] == {"1": ["memory"], "2": ["memory"], "3": ["memory"]}
