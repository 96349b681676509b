"""A tables decode's topic loop (kcodec/columnar/_columnar_topics.pxi): topics it reads in one loop, topics it
hands to the full walk before their partitions (null, long or non-ASCII names) and topics it finishes the full
path's way after their partitions' count (partitions take_rows stops at, tagged fields in a partition or
after the partitions) give the object decode's tables, and bad bytes the same DecodeError, on every engine."""

from __future__ import annotations

import uuid

import pytest
from test_columnar import both, errors_match, every_cut_and_mutation

import kcodec
from kcodec.messages import DescribeTopicPartitionsResponse, MetadataResponse

CASES = [(MetadataResponse, 1), (MetadataResponse, 12), (DescribeTopicPartitionsResponse, 0)]
IDS = ["md-v1", "md-v12", "dtp-v0"]


def _topics(cls, version: int, many: bool = False):
    T, P = cls.Topic, cls.Partition
    flexible = cls is DescribeTopicPartitionsResponse or version >= 9
    names = ["orders", "", "x" * 130, "caf\u00e9", "logs", "metrics", "audit", "events", "clicks", "trades",
             "quotes"]  # (130: a two-byte compact length)
    topics = []
    for i, name in enumerate(names):
        parts = [P(partition_index=k, leader_id=k, error_code=k, replica_nodes=[1, 2, 3],
                   isr_nodes=[1, 2, 3][: 3 - k % 2]) for k in range(i % 4)]  # none to three partitions
        if i == 5:  # six replicas: take_rows' general way, then its run again
            parts[0].replica_nodes = [1, 2, 3, 4, 5, 6]
        if flexible and i == 6:  # a partition with tagged fields: walk's, between run rows
            parts[1].unknown_tagged_fields = {3: b"z"}
        t = T(name=name, is_internal=i % 2 == 1, partitions=parts, error_code=i)
        if flexible:
            t.topic_id = uuid.UUID(int=i + 1)
            t.topic_authorized_operations = 100 + i
            if i == 4:  # tagged fields after the partitions: finished field by field
                t.unknown_tagged_fields = {5: b"ab"}
        topics.append(t)
    if flexible:  # a nullable name, null, between ordinary topics
        topics.insert(2, T(name=None, partitions=[P(partition_index=0)]))
        if cls is DescribeTopicPartitionsResponse:  # null ELR lists: take_rows' general way
            topics[1].partitions[0].eligible_leader_replicas = None
    if many:  # 130 partitions: a two-byte compact count, or an int32 one; then ordinary topics of three
        topics.append(T(name="wide", partitions=[P(partition_index=k, replica_nodes=[k]) for k in range(130)]))
        elr = {"eligible_leader_replicas": [], "last_known_elr": []} if cls is DescribeTopicPartitionsResponse else {}
        topics += [T(name=f"t{i}", partitions=[P(partition_index=k, replica_nodes=[1, 2], isr_nodes=[2], **elr)
                                               for k in range(3)]) for i in range(20)]  # (a run per topic)
    return cls(topics=topics)


@pytest.mark.parametrize("cls,version", CASES, ids=IDS)
def test_topic_loop_and_its_fallbacks_alike(cls, version):
    msg = _topics(cls, version, many=True)
    body = kcodec.encode(msg, version)
    assert errors_match(cls, body, version) == "ok"
    t = both(cls, body, version)
    assert t.topics["name"] == [x.name for x in msg.topics]
    assert t.topics["error_code"].tolist() == [x.error_code for x in msg.topics]
    assert t.partitions["topic_index"].tolist() == [i for i, x in enumerate(msg.topics) for _ in x.partitions]
    assert len(t.partitions) == sum(len(x.partitions) for x in msg.topics)
    if cls is DescribeTopicPartitionsResponse or version >= 9:
        assert t.topics["topic_authorized_operations"].tolist() == [x.topic_authorized_operations
                                                                    for x in msg.topics]


@pytest.mark.parametrize("cls,version", CASES, ids=IDS)
def test_topic_loop_fails_alike(cls, version):
    """Every truncation and mutations of every byte: the same DecodeError (or the same tables) everywhere."""
    body = kcodec.encode(_topics(cls, version), version)
    assert every_cut_and_mutation(cls, body, version) == {"ok", "error"}



def _run_of_topics(cls, version: int, wide: bool = True):
    """Ordinary topics whose partitions partition_run reads with its state kept from topic to topic, broken by
    a topic finished field by field (the state kept across it), one whose second partition take_rows takes
    its general way (six replicas: the state written back, then loaded again) and one of 130 partitions."""
    T, P = cls.Topic, cls.Partition
    elr = {"eligible_leader_replicas": [4], "last_known_elr": []} if cls is DescribeTopicPartitionsResponse else {}
    topics = [T(name=f"t{i}", error_code=i, partitions=[
        P(partition_index=k, leader_id=i, replica_nodes=[i, k, 3][: 1 + (i + k) % 3], isr_nodes=[k] * (k % 2),
          **elr) for k in range(1 + i % 3)]) for i in range(12)]
    topics[4].partitions[1].replica_nodes = [1, 2, 3, 4, 5, 6]
    if wide:
        topics[8].partitions = [P(partition_index=k, replica_nodes=[k, k + 1], **elr) for k in range(130)]
    if cls is DescribeTopicPartitionsResponse or version >= 9:
        topics[5].unknown_tagged_fields = {5: b"ab"}
    return cls(topics=topics)


@pytest.mark.parametrize("cls,version", CASES, ids=IDS)
def test_run_state_kept_across_topics_alike(cls, version):
    msg = _run_of_topics(cls, version)
    body = kcodec.encode(msg, version)
    assert errors_match(cls, body, version) == "ok"
    t = both(cls, body, version)
    assert t.partitions["replica_nodes"].tolist() == [p.replica_nodes for x in msg.topics for p in x.partitions]
    assert t.partitions["topic_index"].tolist() == [i for i, x in enumerate(msg.topics) for _ in x.partitions]
    assert every_cut_and_mutation(cls, kcodec.encode(_run_of_topics(cls, version, wide=False), version),
                                  version) == {"ok", "error"}


def _many_topics(cls, version: int):
    """300 topics: the kept columns' room taken once for many rows and refilled as they grow (the first row
    by keep, without room), every 37th finished field by field (tagged fields after its partitions: the
    lengths written back before it), every 50th with a partition of six replicas (take_rows' general way)."""
    T, P = cls.Topic, cls.Partition
    flexible = cls is DescribeTopicPartitionsResponse or version >= 9
    topics = []
    for i in range(300):
        t = T(name=f"topic-{i}", error_code=i % 7, is_internal=i % 3 == 0,
              partitions=[P(partition_index=k, leader_id=i, replica_nodes=[k, i]) for k in range(i % 4)])
        if i % 50 == 7 and t.partitions:
            t.partitions[0].replica_nodes = [1, 2, 3, 4, 5, 6]
        if flexible:
            t.topic_id = uuid.UUID(int=i * 7919 + 1)
            t.topic_authorized_operations = -i
            if i % 37 == 36:
                t.unknown_tagged_fields = {5: b"ab"}
        topics.append(t)
    return cls(topics=topics)


@pytest.mark.parametrize("cls,version", CASES, ids=IDS)
def test_kept_values_room_taken_once_alike(cls, version):
    msg = _many_topics(cls, version)
    t = both(cls, kcodec.encode(msg, version), version)
    assert t.topics["name"] == [x.name for x in msg.topics]
    assert t.topics["error_code"].tolist() == [x.error_code for x in msg.topics]
    assert t.topics["is_internal"].tolist() == [x.is_internal for x in msg.topics]
    assert t.partitions["topic_index"].tolist() == [i for i, x in enumerate(msg.topics) for _ in x.partitions]
    assert t.partitions["replica_nodes"].tolist() == [p.replica_nodes for x in msg.topics for p in x.partitions]
    if cls is DescribeTopicPartitionsResponse or version >= 9:
        assert t.topics["topic_authorized_operations"].tolist() == [x.topic_authorized_operations
                                                                    for x in msg.topics]
        assert [bytes(u) for u in t.topics["topic_id"]] == [x.topic_id.bytes for x in msg.topics]
