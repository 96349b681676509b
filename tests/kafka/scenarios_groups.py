"""Consumer groups as conformance diffs: the classic protocol (FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup, DescribeGroups) with two members and a rebalance, and
KIP-848's ConsumerGroupHeartbeat."""

from __future__ import annotations

import struct
import time
import uuid

from conformance import Recorder, scenario
from scenarios_admin import create, delete, new_topic

from kcodec.messages import (ConsumerGroupHeartbeatRequest, DescribeGroupsRequest, FindCoordinatorRequest,
                             HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest,
                             OffsetFetchRequest, SyncGroupRequest)


def subscription(*topics: str) -> bytes:
    """A consumer protocol Subscription v0: topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for name in topics:
        out += struct.pack(">h", len(name)) + name.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """A consumer protocol Assignment v0: one topic's partitions, no user data."""
    out = struct.pack(">hi", 0, 1) + struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


def join(group: str, member: str, topic: str, version: int = 9) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member,
                            group_instance_id=None, protocol_type="consumer",
                            protocols=[JoinGroupRequest.Protocol(name="range", metadata=subscription(topic))])


@scenario()
def scenario_classic_group(r: Recorder) -> None:
    """Two members of a classic group: MEMBER_ID_REQUIRED, the first rebalance, a second member (the first
    hears REBALANCE_IN_PROGRESS and rejoins), SyncGroup, Heartbeat, OffsetCommit and OffsetFetch (v7, v8
    batched), LeaveGroup, and the group described at each stage; the errors of a stale generation and an
    unknown member."""
    t, g = f"{r.tag}-data", f"{r.tag}-group"
    create(r, "create", [new_topic(t, 2, 1)])
    r.call("find coordinator v3", FindCoordinatorRequest(key=g, key_type=0), 3)
    r.call("find coordinator v4", FindCoordinatorRequest(key_type=0, coordinator_keys=[g, f"{g}-other"]), 4)
    first = r.call("join, no member id", join(g, "", t), 9, conn="a")
    m1 = first.member_id
    j1 = r.call("join", join(g, m1, t), 9, conn="a")
    r.call("sync alone", SyncGroupRequest(group_id=g, generation_id=j1.generation_id, member_id=m1,
                                          protocol_type="consumer", protocol_name="range",
                                          assignments=[SyncGroupRequest.Assignment(member_id=m1,
                                                                                   assignment=assignment(t, [0, 1]))]),
           5, conn="a")
    r.call("describe stable", DescribeGroupsRequest(groups=[g], include_authorized_operations=True), 5)
    second = r.call("second joins, no member id", join(g, "", t), 9, conn="b")
    m2 = second.member_id
    pending = r.send(join(g, m2, t), 9, conn="b")  # answered once the first member rejoins
    r.until("the rebalance", lambda: r.quiet(DescribeGroupsRequest(groups=[g]), 5, conn="wait")
            .groups[0].group_state == "PreparingRebalance")
    r.call("heartbeat during the rebalance", HeartbeatRequest(group_id=g, generation_id=j1.generation_id,
                                                              member_id=m1), 4, conn="a")
    j1b = r.call("first rejoins", join(g, m1, t), 9, conn="a")
    j2 = r.receive("second joined", pending)
    leader_sync = SyncGroupRequest(group_id=g, generation_id=j1b.generation_id, member_id=m1,
                                   protocol_type="consumer", protocol_name="range",
                                   assignments=[SyncGroupRequest.Assignment(member_id=m1, assignment=assignment(t, [0])),
                                                SyncGroupRequest.Assignment(member_id=m2, assignment=assignment(t, [1]))])
    follower = r.send(SyncGroupRequest(group_id=g, generation_id=j2.generation_id, member_id=m2,
                                       protocol_type="consumer", protocol_name="range", assignments=[]), 5, conn="b")
    r.call("leader syncs", leader_sync, 5, conn="a")
    r.receive("follower synced", follower)
    gen = j1b.generation_id
    r.call("heartbeat", HeartbeatRequest(group_id=g, generation_id=gen, member_id=m2), 4, conn="b")
    r.call("heartbeat, old generation", HeartbeatRequest(group_id=g, generation_id=gen - 1, member_id=m2), 4, conn="b")
    r.call("heartbeat, unknown member", HeartbeatRequest(group_id=g, generation_id=gen, member_id="nobody"), 4)
    commit = OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=gen, member_id=m1, topics=[
        OffsetCommitRequest.Topic(name=t, partitions=[
            OffsetCommitRequest.Partition(partition_index=0, committed_offset=7, committed_leader_epoch=-1,
                                          committed_metadata="meta")])])
    r.call("commit", commit, 8, conn="a")
    commit.generation_id_or_member_epoch = gen - 1
    r.call("commit, old generation", commit, 8, conn="a")
    commit.generation_id_or_member_epoch, commit.member_id = gen, "nobody"
    r.call("commit, unknown member", commit, 8, conn="a")
    r.call("commit, unknown topic", OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=gen, member_id=m1,
                                                        topics=[OffsetCommitRequest.Topic(name=f"{t}-none", partitions=[
                                                            OffsetCommitRequest.Partition(partition_index=0,
                                                                                          committed_offset=1)])]),
           8, conn="a")
    r.call("fetch offsets v7", OffsetFetchRequest(group_id=g, topics=[OffsetFetchRequest.Topic(
        name=t, partition_indexes=[0, 1])]), 7)
    r.call("fetch offsets v8", OffsetFetchRequest(groups=[OffsetFetchRequest.Group(
        group_id=g, topics=[OffsetFetchRequest.Topics(name=t, partition_indexes=[0, 1])]),
        OffsetFetchRequest.Group(group_id=f"{g}-unknown", topics=None)]), 8)
    r.call("fetch all offsets", OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=g, topics=None)]), 8)
    r.call("describe two", DescribeGroupsRequest(groups=[g, f"{g}-unknown"]), 5)
    r.call("leave", LeaveGroupRequest(group_id=g, members=[LeaveGroupRequest.MemberIdentity(member_id=m2),
                                                            LeaveGroupRequest.MemberIdentity(member_id="nobody")]), 5)
    r.call("leave the last", LeaveGroupRequest(group_id=g, members=[LeaveGroupRequest.MemberIdentity(member_id=m1)]), 5)
    r.call("describe empty", DescribeGroupsRequest(groups=[g]), 5)
    r.call("offsets kept", OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=g, topics=None)]), 8)
    delete(r, "delete", [t])


class Members:
    """KIP-848 members heartbeating as consumers do, quietly: each reports the partitions it owns (having
    let go of the revoked ones); ``settle`` until each owns as many as wanted, then records who owns what.
    How many heartbeats that takes is the coordinator's timing, not part of the comparison."""

    def __init__(self, r: Recorder, group: str, topic: str) -> None:
        self.r, self.group, self.topic = r, group, topic
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, set[int]] = {}
        self.errors: dict[str, int] = {}

    def beat(self, member: str) -> object:
        from scenarios_data import topic_id

        epoch = self.epochs.get(member, 0)
        owned = [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id(self.r, self.topic),
                                                               partitions=sorted(self.owned[member]))
                 ] if self.owned.get(member) else []
        resp = self.r.quiet(ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30000,
            subscribed_topic_names=[self.topic], topic_partitions=owned), 1, conn=member)
        self.errors[member] = resp.error_code
        if resp.error_code == 0:
            self.epochs[member] = resp.member_epoch
            if resp.assignment is not None:
                self.owned[member] = {p for tp in resp.assignment.topic_partitions for p in tp.partitions}
            self.owned.setdefault(member, set())
        return resp

    def settle(self, step: str, counts: dict[str, int]) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            for m in counts:
                self.beat(m)
            if all(len(self.owned.get(m, ())) == n for m, n in counts.items()) or any(self.errors.values()):
                break
            time.sleep(0.05)
        names = {m: f"member {i + 1}" for i, m in enumerate(counts)}
        self.r.note(step, {names[m]: {"error_code": self.errors[m], "owned": sorted(self.owned.get(m, ()))}
                           for m in counts})


@scenario()
def scenario_consumer_group_heartbeat(r: Recorder) -> None:
    """KIP-848: a member joins with ConsumerGroupHeartbeat (epoch 0), receives its assignment, a second
    member joins and the partitions are shared (the uniform assignor is sticky: the first keeps its lowest
    partitions), a fenced epoch, leaving (epoch -1)."""
    t, g = f"{r.tag}-data", f"{r.tag}-group"
    create(r, "create", [new_topic(t, 4, 1)])

    def beat(step: str, member: str, epoch: int, topics: bool = True, conn: str = "") -> object:
        return r.call(step, ConsumerGroupHeartbeatRequest(
            group_id=g, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30000,
            subscribed_topic_names=[t] if topics else None, server_assignor=None,
            topic_partitions=[] if epoch == 0 else None), 1, conn=conn)

    a, b = str(uuid.uuid4()), str(uuid.uuid4())  # v1: the member makes its id (KIP-1082)
    members = Members(r, g, t)
    members.settle("a joins and owns all", {a: 4})
    members.settle("b joins, each owns two", {a: 2, b: 2})
    epoch_a = members.epochs[a]
    beat("a, a fenced epoch", a, epoch_a + 10, conn="a")
    beat("b leaves", b, -1, conn="b")
    beat("unknown member", str(uuid.uuid4()), 3)
    r.call("describe", DescribeGroupsRequest(groups=[g]), 5)
    delete(r, "delete", [t])
