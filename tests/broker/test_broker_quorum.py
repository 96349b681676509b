"""DescribeQuorum v0-2 and ListConfigResources v0-1 over the wire."""

from __future__ import annotations

import time
import uuid

import pytest
from broker_wire import Wire, authenticated

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode as E
from kcodec.messages import DescribeQuorumRequest, ListConfigResourcesRequest

TopicData = DescribeQuorumRequest.TopicData
PartitionData = DescribeQuorumRequest.PartitionData


def quorum_request(topics: dict[str, list[int]]) -> DescribeQuorumRequest:
    return DescribeQuorumRequest(topics=[TopicData(topic_name=n, partitions=[PartitionData(partition_index=i)
                                                                            for i in p]) for n, p in topics.items()])


METADATA = {"__cluster_metadata": [0]}


def describe(w: Wire, version: int = 2, topics: dict[str, list[int]] = METADATA):
    return w.call(quorum_request(topics), version)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_node_is_a_voter_and_the_controller_leads(version):
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        with Wire(c.addresses[2]) as w:  # any broker answers (Kafka's forward it to the controller)
            before = int(time.time() * 1000)
            r = describe(w, version)
        assert r.error_code == 0 and len(r.topics) == 1 and r.topics[0].topic_name == "__cluster_metadata"
        p = r.topics[0].partitions[0]
        assert (p.partition_index, p.error_code, p.leader_id, p.leader_epoch) == (0, 0, c.controller_id, 1)
        assert p.high_watermark > 0 and p.observers == []
        assert [v.replica_id for v in p.current_voters] == [1, 2, 3]
        assert {v.log_end_offset for v in p.current_voters} == {p.high_watermark}
        if version >= 1:
            assert all(v.last_fetch_timestamp >= before and v.last_caught_up_timestamp >= before
                       for v in p.current_voters)
        if version >= 2:
            assert r.error_message == p.error_message == ""  # Kafka leaves them at the generated default
            assert {v.replica_directory_id for v in p.current_voters} == {uuid.UUID(int=0)}
            assert [(n.node_id, [(lst.host, lst.port) for lst in n.listeners]) for n in r.nodes] == [
                (s.node_id, [(s.host, s.port)]) for s in c.servers]
            assert {lst.name for n in r.nodes for lst in n.listeners} == {"PLAINTEXT"}


def test_the_log_grows_with_metadata_changes_and_the_epoch_with_controllers():
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        with Wire(c.addresses[0]) as w:
            first = describe(w).topics[0].partitions[0]
            c.create_topic("more", 2, 2)
            grown = describe(w).topics[0].partitions[0]
            assert grown.high_watermark == first.high_watermark + 1
            stopped_at = int(time.time() * 1000)
            c.stop_broker(3)
            c.create_topic("again", 1, 1)
            p = describe(w).topics[0].partitions[0]
            three = next(v for v in p.current_voters if v.replica_id == 3)
            assert three.log_end_offset < p.high_watermark and three.last_fetch_timestamp >= stopped_at
            assert all(v.log_end_offset == p.high_watermark for v in p.current_voters if v.replica_id != 3)
            new = c.move_controller(2)
            p = describe(w).topics[0].partitions[0]
            assert (p.leader_id, p.leader_epoch) == (new, first.leader_epoch + 1)
        c.start_broker(3)
        with Wire(c.addresses[0]) as w:
            p = describe(w).topics[0].partitions[0]
            assert {v.log_end_offset for v in p.current_voters} == {p.high_watermark}


def test_a_reassignment_is_one_record_per_change_of_the_partition():
    """As Kafka's controller writes PartitionChangeRecords: one for a reassignment that starts and
    completes at once, one to start a pending one and one when it completes, one to cancel, none for a
    target that changes nothing or one refused."""
    from test_broker_reassignments import add_topic, alter

    with Cluster(brokers=4, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        assert c.controller_id != 4
        with Wire(c.addresses[0]) as w:
            def grew(action) -> int:
                before = describe(w).topics[0].partitions[0].high_watermark
                action()
                return describe(w).topics[0].partitions[0].high_watermark - before

            assert grew(lambda: alter(w, {("t", 0): [3, 4]})) == 1  # started and completed
            assert grew(lambda: alter(w, {("t", 0): [3, 4]})) == 0  # no change
            assert grew(lambda: alter(w, {("t", 0): [3, 9]})) == 0  # refused
            assert grew(lambda: alter(w, {("t", 0): [4, 3]})) == 1  # reordered
            assert grew(lambda: c.stop_broker(4)) == 1  # fenced
            assert grew(lambda: alter(w, {("t", 0): [1, 4]})) == 1  # pending
            assert grew(lambda: alter(w, {("t", 0): [1, 4, 3]})) == 0  # the same list and sets: no change
            assert grew(lambda: alter(w, {("t", 0): None})) == 1  # cancelled
            assert grew(lambda: alter(w, {("t", 0): [1, 4]})) == 1  # pending again
            assert grew(lambda: c.start_broker(4)) == 2  # registered, then the reassignment completes
            assert c.topics()["t"].replicas == [[1, 4]]


def test_only_the_metadata_partition_is_described():
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        for topics in ({"__cluster_metadata": [1]}, {"orders": [0]}, {"__cluster_metadata": [0, 1]},
                       {"__cluster_metadata": [0], "orders": [0]}):
            r = describe(w, 2, topics)
            assert r.error_code == 0 and r.nodes == []
            assert {(t.topic_name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
                (name, i): E.UNKNOWN_TOPIC_OR_PARTITION for name, parts in topics.items() for i in parts}


def test_describe_on_the_cluster_is_needed():
    with Cluster(brokers=1, users={"admin": "a", "alice": "b"}, acls=["alice:Describe:topic:*"],
                 super_users=["admin"], system_topic_partitions=1) as c:
        with authenticated(c, "alice", "b") as w:
            r = describe(w)
            assert r.error_code == E.CLUSTER_AUTHORIZATION_FAILED and r.topics == []
            assert w.call(ListConfigResourcesRequest(resource_types=[]), 1).error_code == E.CLUSTER_AUTHORIZATION_FAILED
        with authenticated(c, "admin", "a") as w:
            assert describe(w).error_code == 0


def resources(w: Wire, version: int, types: list[int]) -> tuple[int, list[tuple[str, int]]]:
    r = w.call(ListConfigResourcesRequest(resource_types=types), version)
    return r.error_code, [(x.resource_name, x.resource_type) for x in r.config_resources]


def test_list_config_resources():
    with Cluster(brokers=2, system_topic_partitions=1) as c:
        c.create_topic("orders")
        topics = [("__consumer_offsets", 2), ("__transaction_state", 2), ("orders", 2)]
        with Wire(c.addresses[0]) as w:
            assert resources(w, 0, []) == (0, [])  # v0: client-metrics resources only, and none are kept
            assert resources(w, 1, [2]) == (0, topics)
            assert resources(w, 1, [4, 8, 16, 32]) == (0, [("1", 4), ("2", 4), ("1", 8), ("2", 8)])
            assert resources(w, 1, []) == (0, topics + [("1", 4), ("2", 4), ("1", 8), ("2", 8)])
            assert resources(w, 1, [2, 1]) == (E.UNSUPPORTED_VERSION, [])  # 1: not a config resource type
        c.stop_broker(2)
        with Wire(c.addresses[0]) as w:
            assert resources(w, 1, [4]) == (0, [("1", 4)])
