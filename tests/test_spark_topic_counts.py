"""``kcodec.spark.decode.topic_counts``: the (topics, partitions) a decoded message lists at its version."""

import kcodec
from kcodec.messages import (ApiVersionsRequest, ConsumerGroupHeartbeatRequest, DeleteTopicsRequest, MetadataRequest,
                             OffsetFetchRequest, ProduceRequest)
from kcodec.spark.decode import topic_counts


def _decoded(msg, version):
    return kcodec.decode_request(kcodec.encode_request(msg, version, 1, "c"))[1]


def _produce(shape):
    return ProduceRequest(acks=-1, timeout_ms=100, topic_data=[ProduceRequest.TopicProduceData(
        name=f"t{i}", partition_data=[ProduceRequest.PartitionProduceData(index=p, records=None) for p in range(n)])
        for i, n in enumerate(shape)])


def test_topics_and_their_partitions_are_counted():
    assert topic_counts(_decoded(_produce([3, 1, 0]), 9), 9) == (3, 4)
    assert topic_counts(_decoded(_produce([2]), 9), 9) == (1, 2)  # asked again: the plan comes from the cache
    assert topic_counts(_decoded(_produce([]), 3), 3) == (0, 0)


def test_partitions_given_as_indexes_count():
    req = OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequest.Topic(name="t", partition_indexes=[0, 1, 2]),
                                                   OffsetFetchRequest.Topic(name="u", partition_indexes=[5])])
    assert topic_counts(_decoded(req, 5), 5) == (2, 4)  # []int32 decodes as a tuple


def test_only_the_fields_of_the_version_count():
    names = DeleteTopicsRequest(topic_names=["a", "b", "c"], timeout_ms=1)  # v0-5: names; v6: structs
    assert topic_counts(_decoded(names, 3), 3) == (3, 0)
    states = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="a")], timeout_ms=1)
    assert topic_counts(_decoded(states, 6), 6) == (1, 0)
    assert topic_counts(_decoded(OffsetFetchRequest(groups=[]), 8), 8) is None  # v8 lists groups, not topics


def test_null_and_absent_topic_lists():
    assert topic_counts(_decoded(MetadataRequest(topics=[MetadataRequest.Topic(name="a"),
                                                         MetadataRequest.Topic(name="b")]), 12), 12) == (2, 0)
    assert topic_counts(_decoded(MetadataRequest(topics=None), 12), 12) is None  # all topics: none listed
    assert topic_counts(_decoded(ApiVersionsRequest(), 3), 3) is None
    # a null owned-partition list: the subscribed names are the topics it lists
    hb = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                       subscribed_topic_names=["a", "b"], topic_partitions=None)
    assert topic_counts(_decoded(hb, 0), 0) == (2, 0)
