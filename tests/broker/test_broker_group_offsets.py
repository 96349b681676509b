"""Committed offsets and group administration over the wire: OffsetCommit, OffsetFetch, OffsetDelete,
DescribeGroups, ListGroups, DeleteGroups, their ACLs, and offsets surviving a restart on the state file."""

from __future__ import annotations

import struct
from typing import Any, Iterator, Optional

import pytest
from broker_wire import Wire, authenticated
from test_broker_groups import at_coordinator, join, join_req, sync

from kcodec_broker import Cluster, GroupSettings
from kcodec.errors import ErrorCode as E
from kcodec.messages import (DeleteGroupsRequest, DescribeGroupsRequest, FindCoordinatorRequest, JoinGroupRequest,
                             LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest)


@pytest.fixture
def groups() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=7, groups=GroupSettings(min_session_timeout_ms=50)) as c:
        c.create_topic("orders", 3)
        c.create_topic("audit", 1)
        yield c


def commit_req(version: int, offsets: dict[tuple[str, int], int], group: str = "g", generation: int = -1,
               member: str = "", topic_ids: Optional[dict[str, Any]] = None, metadata: str = "m") -> OffsetCommitRequest:
    topics: dict[str, list[Any]] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(OffsetCommitRequest.Partition(
            partition_index=p, committed_offset=o, committed_leader_epoch=7, committed_metadata=metadata))
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member, topics=[
        OffsetCommitRequest.Topic(name=t, topic_id=(topic_ids or {}).get(t), partitions=ps) if version >= 10 else
        OffsetCommitRequest.Topic(name=t, partitions=ps) for t, ps in topics.items()])


def fetched(resp: Any, version: int) -> dict[tuple[str, int], tuple[int, int, str, int]]:
    topics = resp.groups[0].topics if version >= 8 else resp.topics
    return {(t.name if version < 10 else str(t.topic_id), p.partition_index):
            (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) for t in topics for p in t.partitions}


def fetch_req(version: int, topics: Optional[dict[str, list[int]]], group: str = "g") -> OffsetFetchRequest:
    if version >= 8:
        return OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=group, topics=None if topics is None else [
            OffsetFetchRequest.Topics(name=t, partition_indexes=ps) for t, ps in topics.items()])])
    return OffsetFetchRequest(group_id=group, topics=None if topics is None else [
        OffsetFetchRequest.Topic(name=t, partition_indexes=ps) for t, ps in topics.items()])


@pytest.mark.parametrize("version", range(0, 10))
def test_simple_consumer_commits_and_fetches_every_version(groups, version):
    fetch_version = min(version, 9)
    with at_coordinator(groups, "g") as w:
        r = w.call(commit_req(version, {("orders", 0): 5, ("orders", 2): 9, ("audit", 0): 1}), version)
        assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
            ("orders", 0): 0, ("orders", 2): 0, ("audit", 0): 0}
        epoch = 7 if version >= 6 and fetch_version >= 5 else -1
        got = fetched(w.call(fetch_req(fetch_version, {"orders": [0, 1, 2]}), fetch_version), fetch_version)
        assert got == {("orders", 0): (5, epoch, "m", 0), ("orders", 1): (-1, -1, "", 0), ("orders", 2): (9, epoch, "m", 0)}
        if fetch_version >= 2:  # topics null: every committed partition
            every = fetched(w.call(fetch_req(fetch_version, None), fetch_version), fetch_version)
            assert set(every) == {("orders", 0), ("orders", 2), ("audit", 0)}


def test_topic_ids_at_v10_and_errors(groups):
    orders = groups.topics()["orders"].topic_id
    with at_coordinator(groups, "g") as w:
        r = w.call(commit_req(10, {("orders", 1): 3}, topic_ids={"orders": orders}), 10)
        assert r.topics[0].topic_id == orders and r.topics[0].partitions[0].error_code == 0
        got = w.call(OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id="g", topics=[
            OffsetFetchRequest.Topics(topic_id=orders, partition_indexes=[1])])]), 10)
        assert fetched(got, 10) == {(str(orders), 1): (3, 7, "m", 0)}
        bad = w.call(commit_req(9, {("orders", 5): 1, ("nope", 0): 1}), 9)
        assert [p.error_code for t in bad.topics for p in t.partitions] == [E.UNKNOWN_TOPIC_OR_PARTITION] * 2
        big = w.call(commit_req(9, {("orders", 0): 1}, metadata="x" * 5000), 9)
        assert big.topics[0].partitions[0].error_code == E.OFFSET_METADATA_TOO_LARGE


def test_batched_offset_fetch_of_several_groups(groups):
    for g, offset in (("g", 1), ("h", 2)):
        with at_coordinator(groups, g) as w:
            assert w.call(commit_req(9, {("orders", 0): offset}, group=g), 9).topics[0].partitions[0].error_code == 0
    with at_coordinator(groups, "g") as w:
        r = w.call(OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=g, topics=None) for g in ("g", "h")]), 9)
    by_group = {grp.group_id: (grp.error_code, [p.committed_offset for t in grp.topics for p in t.partitions])
                for grp in r.groups}
    assert by_group["g"] == (0, [1])
    same = coordinator_of(groups, "h") == coordinator_of(groups, "g")
    assert by_group["h"] == ((0, [2]) if same else (E.NOT_COORDINATOR, []))


def coordinator_of(cluster: Cluster, group: str) -> int:
    with Wire(cluster.addresses[0]) as w:
        return w.call(FindCoordinatorRequest(key=group), 1).node_id


def test_member_commits_are_checked_against_the_generation(groups):
    with at_coordinator(groups, "g") as w:
        r = join(w)
        assert w.call(commit_req(9, {("orders", 0): 1}, generation=1, member=r.member_id), 9).topics[0].partitions[0] \
            .error_code == E.REBALANCE_IN_PROGRESS  # joined, not yet synced
        w.call(sync(w, r.member_id, 1, {}), 5)
        codes = [w.call(commit_req(9, {("orders", 0): 1}, generation=g, member=m), 9).topics[0].partitions[0].error_code
                 for g, m in ((1, r.member_id), (5, r.member_id), (1, "stranger"), (-1, ""))]
        assert codes == [0, E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
        fresh = w.call(commit_req(9, {("orders", 0): 1}, group="fresh", generation=3, member="m"), 9)
        assert fresh.topics[0].partitions[0].error_code in (E.ILLEGAL_GENERATION, E.NOT_COORDINATOR)


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, empty user data."""
    body = struct.pack(">hi", 0, len(topics)) + b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    return body + struct.pack(">i", -1)


def test_offset_delete_keeps_subscribed_topics(groups):
    with at_coordinator(groups, "g") as w:
        assert w.call(commit_req(9, {("orders", 0): 4, ("audit", 0): 2}), 9).topics[0].partitions[0].error_code == 0
        join(w, protocols=[JoinGroupRequest.Protocol(name="range", metadata=subscription("orders"))])
        r = w.call(OffsetDeleteRequest(group_id="g", topics=[
            OffsetDeleteRequest.Topic(name=t, partitions=[OffsetDeleteRequest.Partition(partition_index=0)])
            for t in ("orders", "audit", "nope")]), 0)
        assert r.error_code == 0
        assert {t.name: t.partitions[0].error_code for t in r.topics} == {
            "orders": E.GROUP_SUBSCRIBED_TO_TOPIC, "audit": 0, "nope": E.UNKNOWN_TOPIC_OR_PARTITION}
        left = fetched(w.call(fetch_req(9, None), 9), 9)
        assert set(left) == {("orders", 0)}
        assert w.call(OffsetDeleteRequest(group_id="missing-group", topics=[]), 0).error_code in (
            E.GROUP_ID_NOT_FOUND, E.NOT_COORDINATOR)


@pytest.mark.parametrize("version", range(0, 7))
def test_describe_list_and_delete_groups(groups, version):
    with at_coordinator(groups, "g", "client-a") as w:
        r = join(w, protocols=[JoinGroupRequest.Protocol(name="range", metadata=subscription("orders"))])
        w.call(sync(w, r.member_id, 1, {r.member_id: b"assigned"}), 5)
        d = w.call(DescribeGroupsRequest(groups=["g", "unknown-here"], include_authorized_operations=version >= 3), version)
        g = d.groups[0]
        assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (0, "Stable", "consumer", "range")
        m = g.members[0]
        assert (m.member_id, m.client_id, m.client_host, m.member_assignment) == (
            r.member_id, "client-a", "/127.0.0.1", b"assigned")
        if version >= 3:
            assert g.authorized_operations != -2147483648 and g.authorized_operations & (1 << 3)  # Read
        other = d.groups[1]
        if other.error_code != E.NOT_COORDINATOR:
            assert other.group_state == "Dead" and other.error_code == (E.GROUP_ID_NOT_FOUND if version >= 6 else 0)
        list_version = min(version, 5)
        listed = w.call(ListGroupsRequest(states_filter=[], types_filter=[]), list_version)
        assert [(x.group_id, x.protocol_type) for x in listed.groups] == [("g", "consumer")]
        if list_version >= 4:
            assert listed.groups[0].group_state == "Stable"
            assert w.call(ListGroupsRequest(states_filter=["empty"]), list_version).groups == []
        if list_version >= 5:
            assert w.call(ListGroupsRequest(types_filter=["consumer"]), list_version).groups == []
            assert len(w.call(ListGroupsRequest(types_filter=["Classic"]), list_version).groups) == 1
        delete_version = min(version, 2)
        res = w.call(DeleteGroupsRequest(groups_names=["g"]), delete_version).results
        assert [(x.group_id, x.error_code) for x in res] == [("g", E.NON_EMPTY_GROUP)]
        w.call(commit_req(9, {("orders", 0): 1}, generation=1, member=r.member_id), 9)
        assert w.call(LeaveGroupRequest(group_id="g", member_id=r.member_id), 0).error_code == 0
        assert [x.error_code for x in w.call(DeleteGroupsRequest(groups_names=["g"]), delete_version).results] == [0]
        assert [x.error_code for x in w.call(DeleteGroupsRequest(groups_names=["g"]), delete_version).results] == [
            E.GROUP_ID_NOT_FOUND]
        assert fetched(w.call(fetch_req(9, None), 9), 9) == {}  # its offsets went with it


def test_list_groups_only_at_each_groups_coordinator(groups):
    names = [f"grp-{i}" for i in range(12)]
    for g in names:
        with at_coordinator(groups, g) as w:
            assert w.call(commit_req(9, {("orders", 0): 1}, group=g), 9).topics[0].partitions[0].error_code == 0
    seen = []
    for address in groups.addresses:
        with Wire(address) as w:
            seen += [x.group_id for x in w.call(ListGroupsRequest(), 4).groups]
    assert sorted(seen) == sorted(names)  # each once: admin clients merge what every broker lists


def test_offsets_survive_a_restart_on_the_state_file(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(state_file=state, system_topic_partitions=3) as c:
        c.create_topic("orders", 2)
        with at_coordinator(c, "g") as w:
            assert w.call(commit_req(9, {("orders", 1): 42}), 9).topics[0].partitions[0].error_code == 0
    with Cluster(state_file=state, system_topic_partitions=3) as c:
        with at_coordinator(c, "g") as w:
            assert fetched(w.call(fetch_req(9, None), 9), 9) == {("orders", 1): (42, 7, "m", 0)}
            assert [x.group_id for x in w.call(ListGroupsRequest(), 3).groups] == ["g"]


def test_group_acls():
    acls = ["alice:Read:topic:orders", "alice:Read:group:app-*", "bob:Describe:group:app-1"]
    with Cluster(users={"alice": "a", "bob": "b"}, acls=acls, system_topic_partitions=1) as c:
        c.create_topic("orders", 1)
        c.create_topic("secret", 1)
        with authenticated(c, "alice", "a") as w:
            assert w.call(FindCoordinatorRequest(key="app-1"), 1).error_code == 0
            assert w.call(FindCoordinatorRequest(key="other"), 1).error_code == E.GROUP_AUTHORIZATION_FAILED
            assert w.call(join_req(group="other"), 9).error_code == E.GROUP_AUTHORIZATION_FAILED
            r = w.call(commit_req(9, {("orders", 0): 1, ("secret", 0): 1}, group="app-1"), 9)
            assert {t.name: t.partitions[0].error_code for t in r.topics} == {"orders": 0, "secret": E.TOPIC_AUTHORIZATION_FAILED}
            assert [x.group_id for x in w.call(ListGroupsRequest(), 3).groups] == ["app-1"]
        with authenticated(c, "bob", "b") as w:
            assert w.call(commit_req(9, {("orders", 0): 2}, group="app-1"), 9).topics[0].partitions[0].error_code \
                == E.GROUP_AUTHORIZATION_FAILED
            got = w.call(fetch_req(9, {"orders": [0]}, group="app-1"), 9)
            assert fetched(got, 9) == {("orders", 0): (-1, -1, "", E.TOPIC_AUTHORIZATION_FAILED)}
            assert w.call(DeleteGroupsRequest(groups_names=["app-1"]), 2).results[0].error_code == \
                E.GROUP_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", range(1, 4))
def test_list_offsets_before_leader_epochs(groups, version):
    # a group member without a committed offset asks where to start: aiokafka sends ListOffsets v1-3,
    # whose answer has no leader epoch (v4+) to carry
    from kcodec.messages import ListOffsetsRequest
    node = groups.topics()["audit"].replicas[0][0]
    with Wire((groups.server(node).host, groups.server(node).port)) as w:
        r = w.call(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name="audit", partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), version)
    p = r.topics[0].partitions[0]
    assert (p.error_code, p.offset) == (0, 0)
