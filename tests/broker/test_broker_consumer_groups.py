"""KIP-848 consumer groups over the wire: ConsumerGroupHeartbeat's server-side assignment and its
reconciliation (a partition changes owner only after its owner released it), fencing, leaving, session
timeouts, OffsetCommit by member epoch, ConsumerGroupDescribe, and how the classic APIs see these groups."""

from __future__ import annotations

import time
from typing import Any, Iterator, Optional

import pytest
from broker_wire import Wire
from test_broker_groups import at_coordinator, join_req

from kcodec_broker import Cluster, GroupSettings
from kcodec.errors import ErrorCode as E
from kcodec.messages import (ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DeleteGroupsRequest,
                             DescribeGroupsRequest, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=7, groups=GroupSettings(
            consumer_session_timeout_ms=400, consumer_heartbeat_interval_ms=100)) as c:
        c.create_topic("orders", 4)
        yield c


def hb(w: Wire, member: str, epoch: int, topics: Optional[list[str]] = None, owned: Optional[dict] = None,
       group: str = "g", version: int = 1, rebalance_ms: int = 5000, regex: Optional[str] = None) -> Any:
    return w.call(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, rebalance_timeout_ms=rebalance_ms,
        subscribed_topic_names=topics, subscribed_topic_regex=regex,
        topic_partitions=None if owned is None else [ConsumerGroupHeartbeatRequest.TopicPartitions(
            topic_id=t, partitions=sorted(ps)) for t, ps in owned.items()]), version)


def parts(resp: Any) -> Optional[set[int]]:
    return None if resp.assignment is None else {p for tp in resp.assignment.topic_partitions for p in tp.partitions}


def test_members_reconcile_without_two_owners(cluster):
    orders = cluster.topics()["orders"].topic_id
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["orders"])
        assert a.error_code == 0 and parts(a) == {0, 1, 2, 3} and a.heartbeat_interval_ms == 100
        b = hb(w, "member-b", 0, ["orders"])
        assert b.error_code == 0 and parts(b) == set()  # its share is still a's
        a2 = hb(w, "member-a", a.member_epoch, owned={orders: {0, 1, 2, 3}})
        assert a2.member_epoch == a.member_epoch and parts(a2) == {0, 1}  # give up 2 and 3 first (sticky, as Kafka)
        assert parts(hb(w, "member-b", b.member_epoch)) is None  # nothing free yet
        a3 = hb(w, "member-a", a2.member_epoch, owned={orders: {0, 1}})
        assert a3.member_epoch == b.member_epoch > a.member_epoch and parts(a3) is None  # released: new epoch
        b2 = hb(w, "member-b", b.member_epoch, owned={})
        assert parts(b2) == {2, 3}
        described = w.call(ConsumerGroupDescribeRequest(group_ids=["g", "nope"], include_authorized_operations=False), 0)
        g = described.groups[0]
        assert (g.error_code, g.group_state, g.assignor_name) == (0, "Stable", "uniform")
        assert {m.member_id: sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
                for m in g.members} == {"member-a": [0, 1], "member-b": [2, 3]}
        assert described.groups[1].error_code in (E.GROUP_ID_NOT_FOUND, E.NOT_COORDINATOR)


def test_fencing_unknown_members_and_bad_requests(cluster):
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["orders"])
        assert hb(w, "member-a", a.member_epoch + 5).error_code == E.FENCED_MEMBER_EPOCH
        assert hb(w, "stranger", 3).error_code == E.UNKNOWN_MEMBER_ID
        assert hb(w, "member-c", 0, None).error_code == E.INVALID_REQUEST  # a first heartbeat names its topics
        assert hb(w, "", 0, ["orders"]).error_code == E.INVALID_REQUEST  # v1: the client names itself
        v0 = hb(w, "", 0, ["orders"], version=0)
        assert v0.error_code == 0 and v0.member_id  # v0: the broker names it
        bad = w.call(ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0,
                                                   subscribed_topic_names=["orders"], server_assignor="nope"), 1)
        assert bad.error_code == E.UNSUPPORTED_ASSIGNOR
        assert w.call(join_req(), 9).error_code == E.INCONSISTENT_GROUP_PROTOCOL  # no classic members here


def test_leave_timeout_offsets_and_the_classic_apis(cluster):
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["orders"])
        b = hb(w, "member-b", 0, ["orders"])

        def commit(member: str, epoch: int) -> int:
            return w.call(OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=epoch, member_id=member,
                                              topics=[OffsetCommitRequest.Topic(name="orders", partitions=[
                                                  OffsetCommitRequest.Partition(partition_index=1, committed_offset=5,
                                                                                committed_metadata="")])]), 9) \
                .topics[0].partitions[0].error_code
        assert commit("member-a", a.member_epoch) == 0
        assert commit("member-a", a.member_epoch + 7) == E.STALE_MEMBER_EPOCH
        assert commit("", -1) == E.UNKNOWN_MEMBER_ID  # an admin commit needs an empty group
        listed = w.call(ListGroupsRequest(types_filter=["consumer"]), 5).groups
        assert [(x.group_id, x.group_type) for x in listed] == [("g", "consumer")]
        assert w.call(ListGroupsRequest(types_filter=["classic"]), 5).groups == []
        assert w.call(DescribeGroupsRequest(groups=["g"]), 6).groups[0].error_code == E.GROUP_ID_NOT_FOUND
        assert w.call(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == E.NON_EMPTY_GROUP
        left = hb(w, "member-a", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        deadline = time.monotonic() + 5  # b stops heartbeating: its session (400 ms) ends
        while cluster.runtime.groups.consumer.groups["g"].members:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert hb(w, "member-b", b.member_epoch).error_code == E.UNKNOWN_MEMBER_ID
        assert w.call(ListGroupsRequest(states_filter=["Empty"]), 5).groups[0].group_id == "g"
        assert commit("", -1) == 0
        assert w.call(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == 0
        assert cluster.state.offsets.of("g") == {}


def test_offset_delete_keeps_the_offsets_of_subscribed_topics(cluster):
    """OffsetDelete works on consumer groups as on classic ones (Kafka's admin deleteConsumerGroupOffsets):
    a topic a member subscribes to, by name or by regex, is GROUP_SUBSCRIBED_TO_TOPIC; the rest go."""
    cluster.create_topic("audit", 1)
    cluster.create_topic("logs-a", 1)

    def delete(w: Wire, *topics: str) -> dict[str, int]:
        r = w.call(OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteRequest.Topic(
            name=t, partitions=[OffsetDeleteRequest.Partition(partition_index=0)]) for t in topics]), 0)
        assert r.error_code == 0
        return {t.name: t.partitions[0].error_code for t in r.topics}
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["orders"])
        hb(w, "member-b", 0, regex="logs-.*")
        w.call(OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=a.member_epoch, member_id="member-a",
                                   topics=[OffsetCommitRequest.Topic(name=t, partitions=[OffsetCommitRequest.Partition(
                                       partition_index=0, committed_offset=3, committed_metadata="")])
                                       for t in ("orders", "audit", "logs-a")]), 9)
        assert delete(w, "orders", "audit", "logs-a") == {
            "orders": E.GROUP_SUBSCRIBED_TO_TOPIC, "audit": 0, "logs-a": E.GROUP_SUBSCRIBED_TO_TOPIC}
        assert set(cluster.state.offsets.of("g")) == {("orders", 0), ("logs-a", 0)}
        for member in ("member-a", "member-b"):
            hb(w, member, -1)  # both leave: the group stays, empty, with its offsets
        assert delete(w, "orders", "logs-a") == {"orders": 0, "logs-a": 0}
        assert cluster.state.offsets.of("g") == {}
        assert w.call(OffsetDeleteRequest(group_id="nope", topics=[]), 0).error_code in (
            E.GROUP_ID_NOT_FOUND, E.NOT_COORDINATOR)


def test_offset_fetch_checks_the_member_epoch(cluster):
    from kcodec.messages import OffsetFetchRequest

    def fetch(w: Wire, member: Optional[str], epoch: int) -> int:
        return w.call(OffsetFetchRequest(groups=[OffsetFetchRequest.Group(
            group_id="g", member_id=member, member_epoch=epoch, topics=None)]), 9).groups[0].error_code
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["orders"])
        assert fetch(w, "member-a", a.member_epoch) == 0
        assert fetch(w, "member-a", a.member_epoch + 3) == E.STALE_MEMBER_EPOCH
        assert fetch(w, "stranger", 1) == E.UNKNOWN_MEMBER_ID
        assert fetch(w, None, -1) == 0  # an admin's fetch names no member


def test_a_member_that_keeps_revoked_partitions_is_removed_after_its_rebalance_timeout(cluster):
    orders = cluster.topics()["orders"].topic_id
    with at_coordinator(cluster, "g") as w:
        a = hb(w, "member-a", 0, ["orders"], rebalance_ms=300)
        b = hb(w, "member-b", 0, ["orders"])
        assert parts(hb(w, "member-a", a.member_epoch, owned={orders: {0, 1, 2, 3}}, rebalance_ms=300)) == {0, 1}
        deadline = time.monotonic() + 5
        while True:  # it keeps heartbeating (its session stays alive) but never lets 2 and 3 go
            code = hb(w, "member-a", a.member_epoch, owned={orders: {0, 1, 2, 3}}, rebalance_ms=300).error_code
            if code == E.UNKNOWN_MEMBER_ID:
                break
            assert code == 0 and time.monotonic() < deadline
            time.sleep(0.05)
        assert parts(hb(w, "member-b", b.member_epoch, owned={})) == {0, 1, 2, 3}
