"""Requests that name a topic by id, from a principal without permission on it: Kafka resolves the id
first (UNKNOWN_TOPIC_ID only for an id it does not know) and then answers TOPIC_AUTHORIZATION_FAILED, the
id being no secret (the name is: DeleteTopics leaves it out)."""

from __future__ import annotations

import uuid

import pytest
from broker_wire import authenticated
from txn_wire import READ_UNCOMMITTED, fetch

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode
from kcodec.messages import DeleteTopicsRequest, ProduceRequest
from kcodec.records import BatchBuilder

USERS = {"eve": "eve-pw"}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(users=USERS, acls=["eve:Describe:topic:seen"], system_topic_partitions=1) as c:
        c.create_topic("hidden", 1, 1)
        c.create_topic("seen", 1, 1)
        yield c


def _produce_by_id(topic_id: uuid.UUID) -> ProduceRequest:
    b = BatchBuilder()
    b.append(None, b"v")
    return ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        topic_id=topic_id, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b.build())])])


@pytest.mark.parametrize("name", ["hidden", "seen"])
def test_delete_topics_by_id(cluster, name):
    topic_id = cluster.topics()[name].topic_id
    with authenticated(cluster, "eve", "eve-pw") as w:
        r = w.call(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(topic_id=topic_id),
                                               DeleteTopicsRequest.DeleteTopicState(topic_id=uuid.uuid4())]), 6)
    denied, unknown = r.responses
    assert (denied.error_code, denied.topic_id) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id)
    assert denied.name == (None if name == "hidden" else "seen")  # only a topic it may describe is named
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert name in cluster.topics()


def test_produce_and_fetch_by_id(cluster):
    topic_id = cluster.topics()["hidden"].topic_id
    with authenticated(cluster, "eve", "eve-pw") as w:
        for tid, code in [(topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED), (uuid.uuid4(), ErrorCode.UNKNOWN_TOPIC_ID)]:
            p = w.call(_produce_by_id(tid), 13).responses[0].partition_responses[0]
            assert p.error_code == code
            req = fetch("", 0, 0, READ_UNCOMMITTED)
            req.topics[0].topic_id = tid
            assert w.call(req, 13).responses[0].partitions[0].error_code == code
