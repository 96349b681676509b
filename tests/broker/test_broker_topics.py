"""The broker's topic administration on the wire: KIP-4, KIP-464, KIP-525, KIP-619, CreatePartitions."""

from __future__ import annotations

import uuid

import pytest
from broker_wire import Wire, authenticated

from kcodec.errors import ErrorCode
from kcodec.messages import (CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest)

CT = CreateTopicsRequest.CreatableTopic


def create(w: Wire, version: int, *topics: CT, validate_only: bool = False):
    return w.call(CreateTopicsRequest(topics=list(topics), timeout_ms=1000, validate_only=validate_only), version).topics


@pytest.mark.parametrize("version", range(0, 8))
def test_explicit_create_every_version(cluster, version):
    with Wire(cluster.addresses[0]) as w:
        [r] = create(w, version, CT(name="orders", num_partitions=3, replication_factor=2))
    assert r.error_code == 0 and r.name == "orders"
    topic = cluster.topics()["orders"]
    assert len(topic.replicas) == 3 and all(len(set(p)) == 2 for p in topic.replicas)
    if version >= 7:
        assert r.topic_id == topic.topic_id
    if version >= 5:  # KIP-525
        assert (r.num_partitions, r.replication_factor, r.topic_config_error_code) == (3, 2, 0)
        assert {c.name: c.value for c in r.configs}["retention.ms"] == "604800000"


# KIP-464's six cases at v4+ (the broker's defaults: 2 partitions, replication factor 2, 3 brokers)
KIP_464 = [
    ("both given", dict(num_partitions=4, replication_factor=3), 0, (4, 3)),
    ("assignment only", dict(num_partitions=-1, replication_factor=-1,
                             assignments=[CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[3])]),
     0, (1, 1)),
    ("partitions and assignment", dict(num_partitions=1, replication_factor=-1,
                                       assignments=[CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[3])]),
     ErrorCode.INVALID_REQUEST, None),
    ("partitions only", dict(num_partitions=5, replication_factor=-1), 0, (5, 2)),
    ("replicas only", dict(num_partitions=-1, replication_factor=3), 0, (2, 3)),
    ("neither", dict(num_partitions=-1, replication_factor=-1), 0, (2, 2)),
]


@pytest.mark.parametrize("case, fields, code, shape", KIP_464, ids=[c[0] for c in KIP_464])
def test_kip_464_cases(cluster, case, fields, code, shape):
    with Wire(cluster.addresses[1]) as w:
        [r] = create(w, 4, CT(name="t", **fields))
    assert r.error_code == code, r.error_message
    if shape:
        t = cluster.topics()["t"]
        assert (len(t.replicas), t.replication_factor) == shape
    else:
        assert "t" not in cluster.topics()


@pytest.mark.parametrize("version", range(0, 4))
def test_defaults_apply_before_v4_too(cluster, version):
    # Kafka's brokers (2.4+) apply KIP-464 at every version; kafkajs relies on it with CreateTopics v3.
    with Wire(cluster.addresses[0]) as w:
        [a, b] = create(w, version, CT(name="a", num_partitions=-1, replication_factor=1),
                        CT(name="b", num_partitions=3, replication_factor=-1))
    assert (a.error_code, b.error_code) == (0, 0)
    assert [(len(t.replicas), t.replication_factor) for t in (cluster.topics()["a"], cluster.topics()["b"])] == \
        [(2, 1), (3, 2)]


@pytest.mark.parametrize("fields, code", [
    (dict(num_partitions=0, replication_factor=1), ErrorCode.INVALID_PARTITIONS),
    (dict(num_partitions=-5, replication_factor=1), ErrorCode.INVALID_PARTITIONS),
    (dict(num_partitions=2**31 - 1, replication_factor=1), ErrorCode.INVALID_PARTITIONS),  # refused, not tried
    (dict(num_partitions=1, replication_factor=0), ErrorCode.INVALID_REPLICATION_FACTOR),
    (dict(num_partitions=1, replication_factor=4), ErrorCode.INVALID_REPLICATION_FACTOR),
    (dict(num_partitions=-1, replication_factor=-1, assignments=[
        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 1])]),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (dict(num_partitions=-1, replication_factor=-1, assignments=[
        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[9])]),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (dict(num_partitions=-1, replication_factor=-1, assignments=[
        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=1, broker_ids=[1])]),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (dict(num_partitions=-1, replication_factor=-1, assignments=[
        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[1]),
        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=1, broker_ids=[1, 2])]),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (dict(num_partitions=1, replication_factor=1, configs=[CreateTopicsRequest.CreatableTopicConfig(
        name="no.such.config", value="1")]), ErrorCode.INVALID_CONFIG),
    (dict(num_partitions=1, replication_factor=1, configs=[CreateTopicsRequest.CreatableTopicConfig(
        name="retention.ms", value="soon")]), ErrorCode.INVALID_CONFIG),
])
def test_create_errors_37_38_39_and_configs(cluster, fields, code):
    with Wire(cluster.addresses[0]) as w:
        [r] = create(w, 7, CT(name="bad", **fields))
    assert r.error_code == code and r.error_message
    assert r.num_partitions == -1 and "bad" not in cluster.topics()


RA = CreateTopicsRequest.CreatableReplicaAssignment
INVALID_ASSIGNMENT = ErrorCode.INVALID_REPLICA_ASSIGNMENT


def _assigned(*pairs: tuple[int, list[int]], partitions: int = -1, rf: int = -1) -> CT:
    return CT(name="manual", num_partitions=partitions, replication_factor=rf,
              assignments=[RA(partition_index=i, broker_ids=b) for i, b in pairs])


# KRaft's ReplicationControlManager.createTopic: its order and messages (3 brokers; 3 is stopped)
MANUAL = [
    ("rf given", _assigned((0, [1]), partitions=1, rf=1), ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but replication factor was not set to -1."),
    ("partitions given", _assigned((0, [1]), partitions=1), ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but numPartitions was not set to -1."),
    ("empty", _assigned((0, [])), INVALID_ASSIGNMENT,
     "The manual partition assignment includes an empty replica list."),
    ("unknown before twice, in id order", _assigned((0, [9, 2, 2, 7])), INVALID_ASSIGNMENT,
     "The manual partition assignment includes the broker 2 more than once."),
    ("unknown, in id order", _assigned((0, [9, 1, 7])), INVALID_ASSIGNMENT,
     "The manual partition assignment includes broker 7, but no such broker is registered."),
    ("twice", _assigned((0, [2, 1, 2])), INVALID_ASSIGNMENT,
     "The manual partition assignment includes the broker 2 more than once."),
    ("inconsistent counts", _assigned((0, [1, 2]), (1, [2])), INVALID_ASSIGNMENT,
     "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with "
     "previous partitions, which have 2 replica(s)."),
    ("an index twice", _assigned((0, [1]), (0, [2])), INVALID_ASSIGNMENT,
     "Found multiple manual partition assignments for partition 0"),
    ("in request order: twice before the gap", _assigned((1, [1]), (1, [9])), INVALID_ASSIGNMENT,
     "Found multiple manual partition assignments for partition 1"),
    ("all stopped", _assigned((0, [1]), (1, [3])), INVALID_ASSIGNMENT,
     "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled "
     "shutdown."),
    ("a gap", _assigned((0, [1]), (2, [2])), INVALID_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
    ("not from 0", _assigned((1, [1]),), INVALID_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
]


@pytest.mark.parametrize("case, topic, code, message", MANUAL, ids=[m[0] for m in MANUAL])
def test_manual_assignments_are_checked_as_kraft_does(cluster, case, topic, code, message):
    cluster.stop_broker(3)
    with Wire(cluster.addresses[0]) as w:
        [r] = create(w, 7, topic)
        [dry] = create(w, 7, topic, validate_only=True)
    assert (r.error_code, r.error_message) == (code, message)
    assert (dry.error_code, dry.error_message) == (code, message)
    assert "manual" not in cluster.topics()


def test_manual_assignments_in_any_order_with_a_stopped_broker(cluster):
    cluster.stop_broker(3)
    with Wire(cluster.addresses[0]) as w:
        [r] = create(w, 7, _assigned((1, [3, 1]), (0, [2, 3])))
    assert r.error_code == 0, r.error_message
    assert cluster.topics()["manual"].replicas == [[2, 3], [3, 1]]
    with Wire(cluster.addresses[0]) as w:
        p = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="manual")]), 12).topics[0].partitions
    assert sorted((x.partition_index, x.leader_id, list(x.isr_nodes)) for x in p) == [(0, 2, [2]), (1, 1, [1])]


def test_batch_results_already_exists_invalid_names_duplicates_validate_only(cluster):
    cluster.create_topic("exists", 1, 1)
    with Wire(cluster.addresses[2]) as w:
        results = create(w, 5, CT(name="exists", num_partitions=1, replication_factor=1),
                         CT(name="bad name", num_partitions=1, replication_factor=1),
                         CT(name="x" * 250, num_partitions=1, replication_factor=1),
                         CT(name="dup", num_partitions=1, replication_factor=1),
                         CT(name="dup", num_partitions=1, replication_factor=1),
                         CT(name="fine", num_partitions=1, replication_factor=1),
                         CT(name="a.b", num_partitions=1, replication_factor=1))
        [dry] = create(w, 5, CT(name="dry", num_partitions=2, replication_factor=1), validate_only=True)
        [collide] = create(w, 5, CT(name="a_b", num_partitions=1, replication_factor=1))
    codes = [r.error_code for r in results]
    assert codes == [ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_TOPIC_EXCEPTION,
                     ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_REQUEST, 0, 0]  # a name given twice: once
    assert results[3].error_message == "Duplicate topic name."
    assert dry.error_code == 0 and dry.num_partitions == 2 and "dry" not in cluster.topics()
    assert collide.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION and "collides" in collide.error_message


def test_kip_525_tagged_config_error_when_describe_configs_is_denied():
    from kcodec_broker import Cluster

    acls = ["alice:Create:cluster", "alice:Describe:topic:*", "bob:Create:cluster", "bob:DescribeConfigs:topic:*"]
    with Cluster(users={"alice": "a", "bob": "b"}, acls=acls, system_topic_partitions=1) as c:
        with authenticated(c, "alice", "a") as w:
            [r] = create(w, 5, CT(name="t1", num_partitions=1, replication_factor=1))
            import kcodec
            from kcodec.messages import CreateTopicsResponse

            raw = kcodec.encode(CreateTopicsResponse(topics=[r]), 5)
        assert r.error_code == 0 and r.topic_config_error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert r.configs == [] and r.num_partitions == -1  # as Kafka 4.4 answers: empty, not null
        assert b"\x01\x00\x02\x00\x1d" in raw  # one tagged field: tag 0, 2 bytes, 29
        with authenticated(c, "bob", "b") as w:
            [r] = create(w, 7, CT(name="t2", num_partitions=1, replication_factor=1))
        # bob may not Describe the topic, yet he made it: Kafka gives him its id
        assert r.topic_config_error_code == 0 and r.configs and r.topic_id == c.topics()["t2"].topic_id


@pytest.mark.parametrize("version", range(0, 7))
def test_delete_by_name_every_version(cluster, version):
    cluster.create_topic("gone", 1, 1)
    with Wire(cluster.addresses[0]) as w:
        req = DeleteTopicsRequest(timeout_ms=1000)
        if version >= 6:
            req.topics = [DeleteTopicsRequest.DeleteTopicState(name="gone"), DeleteTopicsRequest.DeleteTopicState(name="never")]
        else:
            req.topic_names = ["gone", "never"]
        [a, b] = w.call(req, version).responses
    assert (a.name, a.error_code) == ("gone", 0) and b.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "gone" not in cluster.topics()


def test_delete_by_id_and_kip_619_system_topics(cluster):
    t = cluster.create_topic("byid", 1, 1)
    cluster.create_topic("mine", 1, 1, {"internal": "true"})
    S = DeleteTopicsRequest.DeleteTopicState
    with Wire(cluster.addresses[0]) as w:
        res = w.call(DeleteTopicsRequest(topics=[S(topic_id=t.topic_id), S(topic_id=uuid.uuid4()),
                                                 S(name="__consumer_offsets"), S(name="__transaction_state"),
                                                 S(name="mine"), S(name="x", topic_id=uuid.uuid4())]), 6).responses
    assert [(r.name, r.error_code) for r in res] == [
        ("byid", 0), (None, ErrorCode.UNKNOWN_TOPIC_ID), ("__consumer_offsets", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("__transaction_state", ErrorCode.INVALID_TOPIC_EXCEPTION), ("mine", 0), ("x", ErrorCode.INVALID_REQUEST)]
    assert res[0].topic_id == t.topic_id and "KIP-619" in res[2].error_message
    assert {"__consumer_offsets", "__transaction_state"} <= set(cluster.topics()) and "mine" not in cluster.topics()


@pytest.mark.parametrize("version", range(0, 4))
def test_create_partitions(cluster, version):
    cluster.create_topic("grow", 2, 2)
    P = CreatePartitionsRequest.CreatePartitionsTopic
    A = CreatePartitionsRequest.CreatePartitionsAssignment
    with Wire(cluster.addresses[0]) as w:
        res = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=4, assignments=None)], timeout_ms=1000), version).results
        assert res[0].error_code == 0 and len(cluster.topics()["grow"].replicas) == 4
        bad = w.call(CreatePartitionsRequest(topics=[
            P(name="grow", count=3, assignments=None)], timeout_ms=1000), version).results
        huge = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=2**31 - 1, assignments=None)]),
                      version).results
        assert huge[0].error_code == ErrorCode.INVALID_PARTITIONS and "limit" in huge[0].error_message
        same = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=4, assignments=None)]), version).results
        wrong = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=6, assignments=[A(broker_ids=[1, 2])])]),
                       version).results
        dup = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=5, assignments=[A(broker_ids=[1, 1])])]),
                     version).results
        manual = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=5, assignments=[A(broker_ids=[3, 1])]),
                                                        P(name="nope", count=2, assignments=None)]), version).results
        dry = w.call(CreatePartitionsRequest(topics=[P(name="grow", count=9, assignments=None)], validate_only=True),
                     version).results
    # Kafka's messages (ReplicationControlManager.createPartitions, validateManualPartitionAssignment)
    assert (bad[0].error_code, bad[0].error_message) == (
        ErrorCode.INVALID_PARTITIONS, "The topic grow currently has 4 partition(s); 3 would not be an increase.")
    assert (same[0].error_code, same[0].error_message) == (ErrorCode.INVALID_PARTITIONS,
                                                           "Topic already has 4 partition(s).")
    assert (wrong[0].error_code, wrong[0].error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only 1 assignment(s) "
        "were specified.")
    assert (dup[0].error_code, dup[0].error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 more than once.")
    assert [r.error_code for r in manual] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert dry[0].error_code == 0
    assert cluster.topics()["grow"].replicas[4] == [3, 1] and len(cluster.topics()["grow"].replicas) == 5


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_every_version(cluster, version):
    t = cluster.create_topic("meta", 3, 2)
    cluster.create_topic("udi", 1, 1, {"internal": "true"})
    with Wire(cluster.addresses[2]) as w:
        no_auto = version < 4  # before v4 a named unknown topic is always auto-created
        everything = w.call(MetadataRequest(topics=[] if version == 0 else None, allow_auto_topic_creation=no_auto), version)
        named = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="meta"), MetadataRequest.Topic(name="nope")],
                                       allow_auto_topic_creation=no_auto), version)
    assert sorted((b.node_id, b.port) for b in everything.brokers) == sorted(
        (i + 1, p) for i, (_, p) in enumerate(cluster.addresses))
    by_name = {x.name: x for x in everything.topics}
    assert set(by_name) == {"__consumer_offsets", "__transaction_state", "meta", "udi"}
    if version >= 1:  # KIP-619: system and user-defined internal topics are both internal
        assert [by_name[n].is_internal for n in ("__consumer_offsets", "__transaction_state", "meta", "udi")] == \
            [True, True, False, True]
        assert everything.controller_id == 1
    m, nope = named.topics
    assert m.error_code == 0 and [list(p.replica_nodes) for p in m.partitions] == t.replicas
    # before v4 "nope" is created, and the creating request answered without partitions, as Kafka's
    assert nope.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not nope.partitions
    assert ("nope" in cluster.topics()) == (version < 4)
    if version >= 10:
        assert m.topic_id == t.topic_id
    if version >= 2:
        assert everything.cluster_id == cluster.state.cluster_id


def test_metadata_by_topic_id_auto_creation_and_authorized_operations(cluster):
    t = cluster.create_topic("ided", 1, 1)
    with Wire(cluster.addresses[0]) as w:
        r = w.call(MetadataRequest(topics=[MetadataRequest.Topic(topic_id=t.topic_id, name=None),
                                           MetadataRequest.Topic(topic_id=uuid.uuid4(), name=None)],
                                   include_topic_authorized_operations=True), 12)
        auto = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="auto1")], allow_auto_topic_creation=True), 9)
        v3 = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="auto2")]), 3)
        invalid = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="no way")]), 9)
    found, unknown = r.topics
    assert found.name == "ided" and found.topic_authorized_operations > 0
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID and unknown.name is None
    # Kafka answers the creating request without partitions; the topic is there for the next one
    assert auto.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not auto.topics[0].partitions
    assert len(cluster.topics()["auto1"].replicas) == 2  # num.partitions
    assert v3.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "auto2" in cluster.topics()  # before v4: always auto-create
    assert invalid.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_auto_creation_after_a_delay_answers_unknown_meanwhile():
    """auto_create_delay_ms: the topic appears a while after the Metadata that asks for it, as when Kafka's
    controller creates it; Metadata meanwhile answers UNKNOWN_TOPIC_OR_PARTITION and creates nothing more
    (kafka-go's partition watcher counts on that window to see the partitions arrive)."""
    import time

    from kcodec_broker import Cluster

    with Cluster(auto_create_delay_ms=300, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        ask = MetadataRequest(topics=[MetadataRequest.Topic(name="later")], allow_auto_topic_creation=True)
        for _ in range(2):
            first = w.call(ask, 12).topics[0]
            assert (first.error_code, first.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
            assert "later" not in c.topics()
        deadline = time.monotonic() + 5
        while "later" not in c.topics():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        found = w.call(ask, 12).topics[0]
        assert found.error_code == 0 and len(found.partitions) == 1


def test_state_file_survives_a_restart(tmp_path):
    from kcodec_broker import Cluster

    path = tmp_path / "state.json"
    with Cluster(brokers=2, state_file=path, system_topic_partitions=1) as c:
        t = c.create_topic("kept", 3, 2, {"retention.ms": "1000"})
        cluster_id = c.state.cluster_id
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically: no temporary file left
    with Cluster(brokers=2, state_file=path, system_topic_partitions=1) as c:
        again = c.topics()["kept"]
        assert (again.topic_id, again.replicas, again.configs) == (t.topic_id, t.replicas, {"retention.ms": "1000"})
        assert c.state.cluster_id == cluster_id
        with Wire(c.addresses[1]) as w:
            w.call(DeleteTopicsRequest(topic_names=["kept"]), 4)
    with Cluster(brokers=2, state_file=path, system_topic_partitions=1) as c:
        assert "kept" not in c.topics()
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot load broker state"):
        Cluster(state_file=path)
