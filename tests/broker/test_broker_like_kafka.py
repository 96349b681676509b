"""What the conformance diffs against Apache Kafka 4.4 (tests/kafka) found in kcodec broker, each pinned here
by a fast test that needs no JVM: the answers Kafka gave, field by field."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
from broker_wire import Wire, authenticated

from kcodec_broker import Cluster, Listener
from kcodec.messages import (CreateAclsRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                             DescribeConfigsRequest, DescribeTopicPartitionsRequest, FetchRequest,
                             FindCoordinatorRequest, MetadataRequest)

CT = CreateTopicsRequest.CreatableTopic

# Kafka 4.4's topic configs of a default cluster, with what it answers for a topic that sets none:
# (value, ConfigSource): 5 DEFAULT_CONFIG; 3 DYNAMIC_DEFAULT_BROKER_CONFIG (written at format time, KIP-966)
KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": ("delete", 5), "compression.gzip.level": ("-1", 5), "compression.lz4.level": ("9", 5),
    "compression.type": ("producer", 5), "compression.zstd.level": ("3", 5), "delete.retention.ms": ("86400000", 5),
    "errors.deadletterqueue.group.enable": ("false", 5), "file.delete.delay.ms": ("60000", 5),
    "flush.messages": ("9223372036854775807", 5), "flush.ms": ("9223372036854775807", 5),
    "follower.replication.throttled.replicas": ("", 5), "index.interval.bytes": ("4096", 5),
    "leader.replication.throttled.replicas": ("", 5), "local.retention.bytes": ("-2", 5),
    "local.retention.ms": ("-2", 5), "max.compaction.lag.ms": ("9223372036854775807", 5),
    "max.decompressed.message.bytes": ("2147483639", 5), "max.message.bytes": ("1048588", 5),
    "message.timestamp.after.max.ms": ("3600000", 5), "message.timestamp.before.max.ms": ("9223372036854775807", 5),
    "message.timestamp.type": ("CreateTime", 5), "min.cleanable.dirty.ratio": ("0.5", 5),
    "min.compaction.lag.ms": ("0", 5), "min.insync.replicas": ("1", 3), "preallocate": ("false", 5),
    "remote.copy.lag.bytes": ("-1", 5), "remote.copy.lag.ms": ("0", 5), "remote.log.copy.disable": ("false", 5),
    "remote.log.delete.on.disable": ("false", 5), "remote.storage.enable": ("false", 5),
    "retention.bytes": ("-1", 5), "retention.ms": ("604800000", 5), "segment.bytes": ("1073741824", 5),
    "segment.index.bytes": ("10485760", 5), "segment.jitter.ms": ("0", 5), "segment.ms": ("604800000", 5),
    "unclean.leader.election.enable": ("false", 5),
}


@pytest.fixture(scope="module")
def one() -> Iterator[Cluster]:
    with Cluster(1, system_topic_partitions=2) as c:
        yield c


def _configs(entries) -> dict[str, tuple[str, int]]:
    return {c.name: (c.value, c.config_source) for c in entries}


def test_a_new_topic_lists_kafka_4_4s_configs(one):
    with Wire(one.addresses[0]) as w:
        made = w.call(CreateTopicsRequest(topics=[CT(name="configs-listed", num_partitions=1, replication_factor=1)],
                                          timeout_ms=1000), 7).topics[0]
        described = w.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name="configs-listed", configuration_keys=None)]), 4).results[0]
    assert _configs(made.configs) == KAFKA_TOPIC_DEFAULTS
    assert _configs(described.configs) == KAFKA_TOPIC_DEFAULTS


def test_internal_is_listed_only_where_a_topic_sets_it(one):
    with Wire(one.addresses[0]) as w:
        made = w.call(CreateTopicsRequest(topics=[CT(name="configs-internal", num_partitions=1, replication_factor=1,
                                                     configs=[CreateTopicsRequest.CreatableTopicConfig(
                                                         name="internal", value="true")])], timeout_ms=1000), 7)
    assert _configs(made.topics[0].configs) == {**KAFKA_TOPIC_DEFAULTS, "internal": ("true", 1)}


def test_system_topics_have_the_configs_kafkas_coordinators_give_them(one):
    with Wire(one.addresses[0]) as w:
        results = w.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name=n, configuration_keys=None)
            for n in ("__consumer_offsets", "__transaction_state")]), 4).results
    offsets, txn = (_configs(r.configs) for r in results)
    assert {k: v for k, v in offsets.items() if v[1] == 1} == {
        "cleanup.policy": ("compact", 1), "compression.type": ("producer", 1), "segment.bytes": ("104857600", 1)}
    assert {k: v for k, v in txn.items() if v[1] == 1} == {
        "cleanup.policy": ("compact", 1), "compression.type": ("uncompressed", 1), "min.insync.replicas": ("1", 1),
        "segment.bytes": ("104857600", 1), "unclean.leader.election.enable": ("false", 1)}


@pytest.mark.parametrize("name, value, message", [
    ("retention.ms", "soon", "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
    ("segment.bytes", "x", "Invalid value x for configuration segment.bytes: Not a number of type INT"),
    ("cleanup.policy", "sometimes",
     "Invalid value sometimes for configuration cleanup.policy: String must be one of: compact, delete"),
    ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ("no.such.config", "1", "Unknown topic config name: no.such.config"),
])
def test_config_errors_are_worded_as_kafkas(one, name, value, message):
    with Wire(one.addresses[0]) as w:
        [r] = w.call(CreateTopicsRequest(topics=[CT(name="bad-config", num_partitions=1, replication_factor=1,
                                                   configs=[CreateTopicsRequest.CreatableTopicConfig(
                                                       name=name, value=value)])], timeout_ms=1000), 7).topics
    assert (r.error_code, r.error_message) == (40, message)


def test_topic_names_are_refused_in_kafka_4_4s_words(one):
    names = ["", ".", "..", "x" * 250, "bad/name"]
    with Wire(one.addresses[0]) as w:
        results = w.call(CreateTopicsRequest(topics=[CT(name=n, num_partitions=1, replication_factor=1) for n in names],
                                             timeout_ms=1000), 7).topics
    assert [(r.error_code, r.error_message) for r in results] == [
        (17, "Topic name is invalid: the empty string is not allowed"),
        (17, "Topic name is invalid: '.' is not allowed"), (17, "Topic name is invalid: '..' is not allowed"),
        (17, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
        (17, "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII alphanumerics, "
             "'.', '_' and '-'")]


def test_a_name_given_twice_is_answered_once(one):
    one.create_topic("given-twice", 1, 1)
    with Wire(one.addresses[0]) as w:
        made = w.call(CreateTopicsRequest(topics=[CT(name="twice", num_partitions=1, replication_factor=1)] * 2,
                                          timeout_ms=1000), 7).topics
        grown = w.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="given-twice", count=3, assignments=None)] * 2, timeout_ms=1000, validate_only=True), 3).results
        gone = w.call(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="given-twice")] * 2 + [
            DeleteTopicsRequest.DeleteTopicState(topic_id=uuid.UUID(int=3))] * 2, timeout_ms=1000), 6).responses
    assert [(r.name, r.error_code, r.error_message) for r in made] == [("twice", 42, "Duplicate topic name.")]
    assert [(r.name, r.error_code, r.error_message) for r in grown] == [("given-twice", 42, "Duplicate topic name.")]
    assert [(r.name, r.error_code, r.error_message) for r in gone] == [
        ("given-twice", 42, "Duplicate topic name."), (None, 42, "Duplicate topic id.")]


def test_unknown_topics_and_ids_in_kafkas_words(one):
    with Wire(one.addresses[0]) as w:
        gone = w.call(DeleteTopicsRequest(topics=[
            DeleteTopicsRequest.DeleteTopicState(name="never"),
            DeleteTopicsRequest.DeleteTopicState(topic_id=uuid.UUID(int=9)),
            DeleteTopicsRequest.DeleteTopicState(name="both", topic_id=uuid.UUID(int=9)),
            DeleteTopicsRequest.DeleteTopicState(name=None)], timeout_ms=1000), 6).responses
        [grown] = w.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="never", count=3, assignments=None)], timeout_ms=1000, validate_only=False), 3).results
        [made] = w.call(CreateTopicsRequest(topics=[CT(name="too-many", num_partitions=1, replication_factor=2)],
                                            timeout_ms=1000), 7).topics
    assert [(r.error_code, r.error_message) for r in gone] == [
        (3, "This server does not host this topic-partition."), (100, "This server does not host this topic ID."),
        (42, "You may not specify both topic name and topic id."), (42, "Neither topic name nor id were specified.")]
    assert (grown.error_code, grown.error_message) == (3, None)
    assert made.error_message == ("Unable to replicate the partition 2 time(s): The target replication factor of 2 "
                                  "cannot be reached because only 1 broker(s) are registered or some brokers have "
                                  "all their log directories cordoned.")


@pytest.fixture(scope="module")
def secured() -> Iterator[Cluster]:
    """An authorizer on, bob with no ACL (SASL, the first listener), the plaintext listener all-powerful."""
    with Cluster(1, users={"bob": "b"}, acls=[], super_users=["ANONYMOUS"], system_topic_partitions=1,
                 listeners=[Listener("SASL_PLAINTEXT"), Listener("PLAINTEXT")]) as c:
        c.create_topic("guarded", 1, 1)
        yield c


def test_empty_messages_where_kafka_sends_empty_ones(secured):
    R = DescribeConfigsRequest.DescribeConfigsResource
    with Wire(secured.listener_addresses("PLAINTEXT")[0]) as w:
        configs = w.call(DescribeConfigsRequest(resources=[R(resource_type=2, resource_name="guarded",
                                                             configuration_keys=["retention.ms"]),
                                                           R(resource_type=2, resource_name="absent",
                                                             configuration_keys=None)]), 4).results
        v4 = w.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4).coordinators
        v3 = w.call(FindCoordinatorRequest(key="g", key_type=0), 3)
        acls = w.call(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=2, resource_name="guarded", resource_pattern_type=3, principal="User:bob", host="*",
            operation=8, permission_type=3)]), 3).results
    assert [(r.error_code, r.error_message) for r in configs] == [(0, ""), (3, "")]
    assert [(c.error_code, c.error_message) for c in v4] == [(0, "")]
    assert (v3.error_code, v3.error_message) == (0, "NONE")
    assert [(a.error_code, a.error_message) for a in acls] == [(0, "")]


def test_refusals_carry_kafkas_messages(secured):
    with authenticated(secured, "bob", "b") as w:
        [configs] = w.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name="guarded", configuration_keys=None)]), 4).results
        [broker] = w.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=4, resource_name="1", configuration_keys=None)]), 4).results
        [v4] = w.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4).coordinators
        v3 = w.call(FindCoordinatorRequest(key="g", key_type=0), 3)
    assert (configs.error_code, configs.error_message) == (29, "Topic authorization failed.")
    assert (broker.error_code, broker.error_message) == (31, "Cluster authorization failed.")
    assert (v4.error_code, v4.error_message) == (30, "")
    assert (v3.error_code, v3.error_message) == (30, "Group authorization failed.")


def test_a_creator_without_describe_configs_gets_the_id_and_no_configs():
    acls = ["bob:Create:topic:made-*"]  # no Describe, no DescribeConfigs
    with Cluster(1, users={"bob": "b"}, acls=acls, system_topic_partitions=1) as c:
        with authenticated(c, "bob", "b") as w:
            [made] = w.call(CreateTopicsRequest(topics=[CT(name="made-by-bob", num_partitions=1, replication_factor=1)],
                                                timeout_ms=1000), 7).topics
            [gone] = w.call(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="made-by-bob")],
                                                timeout_ms=1000), 6).responses
            [grown] = w.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
                name="made-by-bob", count=2, assignments=None)], timeout_ms=1000, validate_only=True), 3).results
        topic_id = c.topics()["made-by-bob"].topic_id
    assert (made.error_code, made.topic_id, made.topic_config_error_code, made.configs) == (0, topic_id, 29, [])
    assert (gone.error_code, gone.error_message) == (29, "Topic authorization failed.")
    assert (grown.error_code, grown.error_message) == (29, None)


def test_metadata_by_id_with_an_empty_name_and_operations_for_unknown_names(one):
    one.create_topic("by-id", 2, 1)
    topic_id = one.topics()["by-id"].topic_id
    with Wire(one.addresses[0]) as w:
        [by_id] = w.call(MetadataRequest(topics=[MetadataRequest.Topic(topic_id=topic_id)],  # name: "" (default)
                                         allow_auto_topic_creation=False), 12).topics
        invalid, unknown = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="bad/name"),
                                                          MetadataRequest.Topic(name="no-such")],
                                                  allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=True), 12).topics
        [described] = w.call(DescribeTopicPartitionsRequest(topics=[
            DescribeTopicPartitionsRequest.TopicRequest(name="by-id"),
            DescribeTopicPartitionsRequest.TopicRequest(name="no-such")]), 0).topics[:1]
        missing = w.call(DescribeTopicPartitionsRequest(topics=[
            DescribeTopicPartitionsRequest.TopicRequest(name="no-such")]), 0).topics[0]
    assert (by_id.error_code, by_id.name, len(by_id.partitions)) == (0, "by-id", 2)
    everything = 3576  # Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs
    assert (invalid.error_code, invalid.topic_authorized_operations) == (17, everything)
    assert (unknown.error_code, unknown.topic_authorized_operations) == (3, everything)
    assert (missing.error_code, missing.topic_authorized_operations) == (3, everything)
    assert described.partitions and all(not p.eligible_leader_replicas and p.eligible_leader_replicas is not None
                                        and not p.last_known_elr and p.last_known_elr is not None
                                        for p in described.partitions)


def test_fetch_errors_carry_kafkas_empty_fields(secured):
    secured.create_topic("fetched", 1, 1)

    def fetch(topic: str, offset: int = 0, partition: int = 0, isolation: int = 0) -> Any:
        return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation,
                            session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                                FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                            partition_max_bytes=1 << 20)])])

    def part(w: Wire, req: Any) -> Any:
        return w.call(req, 12).responses[0].partitions[0]

    with Wire(secured.listener_addresses("PLAINTEXT")[0]) as w:
        past = part(w, fetch("fetched", 5))
        refused = [part(w, fetch("no-such")), part(w, fetch("fetched", partition=3))]
    with authenticated(secured, "bob", "b") as w:
        refused.append(part(w, fetch("fetched")))
    assert (past.error_code, past.high_watermark, past.last_stable_offset, past.log_start_offset) == (1, -1, -1, -1)
    assert [(p.error_code, p.aborted_transactions) for p in refused] == [(3, []), (3, []), (29, [])]


def test_a_duplicate_is_answered_with_the_stored_batchs_timestamp(one):
    from kcodec.messages import InitProducerIdRequest, ProduceRequest
    from kcodec.records import BatchBuilder

    one.create_topic("deduplicated", 1, 1)

    def produce(w: Wire, seq: int) -> Any:
        b = BatchBuilder(producer_id=pid.producer_id, producer_epoch=pid.producer_epoch, base_sequence=seq)
        for i in range(2):
            b.append(b"k", b"v", timestamp=1_600_000_000_000 + seq + i)
        req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="deduplicated", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b.build())])])
        return w.call(req, 9).responses[0].partition_responses[0]

    with Wire(one.addresses[0]) as w:
        pid = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
        first, second, again = produce(w, 0), produce(w, 2), produce(w, 0)
    assert [(p.error_code, p.base_offset, p.log_append_time_ms) for p in (first, second, again)] == [
        (0, 0, -1), (0, 2, -1), (0, 0, 1_600_000_000_001)]  # CreateTime: -1 for appends; the duplicate's max


def test_a_partition_asked_for_twice_is_answered_once_with_invalid_request(one):
    from kcodec.messages import ListOffsetsRequest

    one.create_topic("listed", 2, 1)
    P = ListOffsetsRequest.ListOffsetsPartition
    with Wire(one.addresses[0]) as w:
        [topic] = w.call(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="listed", partitions=[P(partition_index=0, timestamp=-2), P(partition_index=1, timestamp=-1),
                                       P(partition_index=0, timestamp=-1)])]), 9).topics
    assert [(p.partition_index, p.error_code, p.offset) for p in topic.partitions] == [(0, 42, -1), (1, 0, 0)]


def test_a_groups_authorized_operations_include_its_configs(one):
    from kcodec.messages import DescribeGroupsRequest

    with Wire(one.addresses[0]) as w:
        [group] = w.call(DescribeGroupsRequest(groups=["described"], include_authorized_operations=True), 5).groups
    assert group.authorized_operations == 3400  # Read, Delete, Describe, DescribeConfigs, AlterConfigs


def test_consumer_group_heartbeat_errors_and_leaving_as_kafka_answers(one):
    from kcodec.messages import ConsumerGroupHeartbeatRequest as Beat

    one.create_topic("beaten", 2, 1)
    member = str(uuid.uuid4())

    def beat(w: Wire, epoch: int, member_id: str = member) -> Any:
        return w.call(Beat(group_id="beaters", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=30000,
                           subscribed_topic_names=["beaten"], topic_partitions=[] if epoch == 0 else None), 1)

    with Wire(one.addresses[0]) as w:
        joined = beat(w, 0)
        fenced, unknown, left = beat(w, joined.member_epoch + 10), beat(w, 3, "nobody"), beat(w, -1)
    assert (fenced.error_code, fenced.member_id, fenced.member_epoch, fenced.heartbeat_interval_ms) == (110, None, 0, 0)
    assert fenced.error_message == (
        f"The consumer group member has a greater member epoch ({joined.member_epoch + 10}) than the one known by "
        f"the group coordinator ({joined.member_epoch}). The member must abandon all its partitions and rejoin.")
    assert (unknown.error_code, unknown.member_id, unknown.member_epoch) == (25, None, 0)
    assert unknown.error_message == "Member nobody is not a member of group beaters."
    assert (left.error_code, left.member_id, left.member_epoch, left.heartbeat_interval_ms) == (0, member, -1, 0)


def test_the_uniform_assignor_is_sticky(one):
    from kcodec.messages import ConsumerGroupHeartbeatRequest as Beat

    one.create_topic("shared", 4, 1)
    topic_id = one.topics()["shared"].topic_id

    def beat(w: Wire, member: str, epoch: int, owned: list[int]) -> Any:
        return w.call(Beat(group_id="sticky", member_id=member, member_epoch=epoch, rebalance_timeout_ms=30000,
                           subscribed_topic_names=["shared"], topic_partitions=[
                               Beat.TopicPartitions(topic_id=topic_id, partitions=owned)]), 1)

    def parts(resp: Any) -> Any:
        return None if resp.assignment is None else sorted(p for t in resp.assignment.topic_partitions
                                                           for p in t.partitions)

    with Wire(one.addresses[0]) as w:
        a = beat(w, "zzz-first", 0, [])  # ids sort against join order: the first keeps its partitions anyway
        assert parts(a) == [0, 1, 2, 3]
        b = beat(w, "aaa-second", 0, [])
        assert parts(beat(w, "zzz-first", a.member_epoch, [0, 1, 2, 3])) == [0, 1]  # Kafka keeps the lowest
        settled = beat(w, "zzz-first", a.member_epoch, [0, 1])
        assert parts(beat(w, "aaa-second", b.member_epoch, [])) == [2, 3] and settled.error_code == 0
