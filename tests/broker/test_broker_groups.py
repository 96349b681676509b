"""Consumer groups over the wire: FindCoordinator, JoinGroup/SyncGroup/Heartbeat/LeaveGroup and rebalances.

Raw requests through kcodec's own encoder: a member whose JoinGroup must wait sends it and reads the
answer later (``Wire.request`` / ``Wire.receive``), as a real client's connection does.
"""

from __future__ import annotations

import time
from typing import Any, Iterator, Optional

import pytest
from broker_wire import Wire

from kcodec_broker import Cluster, GroupSettings
from kcodec_broker.groups.placement import coordinator_for, java_hash, partition_for
from kcodec.errors import ErrorCode as E
from kcodec.messages import (FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                             SyncGroupRequest)

PROTOCOLS = [JoinGroupRequest.Protocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00")]


@pytest.fixture
def groups() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=7, groups=GroupSettings(min_session_timeout_ms=50)) as c:
        c.create_topic("orders", 3)
        yield c


def at_coordinator(cluster: Cluster, group: str, client_id: str = "member") -> Wire:
    node = coordinator_for(cluster.state, group)
    server = cluster.server(node)
    return Wire((server.host, server.port), client_id=client_id)


def join_req(group: str = "g", member: str = "", instance: Optional[str] = None, session_ms: int = 10_000,
             rebalance_ms: int = 10_000, protocols: Optional[list[Any]] = None,
             protocol_type: str = "consumer") -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
                            member_id=member, group_instance_id=instance, protocol_type=protocol_type,
                            protocols=PROTOCOLS if protocols is None else protocols)


def join(w: Wire, version: int = 9, **kw: Any) -> Any:
    """A complete join: v4+ first gets MEMBER_ID_REQUIRED and joins again with that id."""
    r = w.call(join_req(**kw), version)
    if r.error_code == E.MEMBER_ID_REQUIRED:
        assert version >= 4 and r.member_id
        kw["member"] = r.member_id
        r = w.call(join_req(**kw), version)
    return r


def sync(w: Wire, member: str, generation: int, assignments: Optional[dict[str, bytes]] = None,
         group: str = "g", version: int = 5, instance: Optional[str] = None) -> Any:
    return SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, group_instance_id=instance,
                            protocol_type="consumer" if version >= 5 else None,
                            protocol_name="range" if version >= 5 else None,
                            assignments=[SyncGroupRequest.Assignment(member_id=m, assignment=a)
                                         for m, a in (assignments or {}).items()])


def heartbeat(w: Wire, member: str, generation: int, group: str = "g", instance: Optional[str] = None) -> int:
    return w.call(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member,
                                   group_instance_id=instance), 4).error_code


def until_rebalancing(w: Wire, member: str, generation: int, instance: Optional[str] = None) -> None:
    """Heartbeat until the coordinator has seen another connection's join (requests on two connections
    race: the join sent first may be served second)."""
    deadline = time.monotonic() + 5
    while heartbeat(w, member, generation, instance=instance) != E.REBALANCE_IN_PROGRESS:
        assert time.monotonic() < deadline
        time.sleep(0.01)


# -- FindCoordinator ---------------------------------------------------------------------------------------
def test_java_hash_and_partition_match_kafka():
    assert java_hash("hello") == 99162322 and java_hash("my-group") == -1906497762
    assert java_hash("\U0001F600") == 1772899  # over UTF-16 code units, as Java's String
    assert partition_for("my-group", 50) == 1906497762 % 50


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator_every_version(groups, version):
    keys = ["g1", "g2", "another-group"]
    with Wire(groups.addresses[0]) as w:
        if version >= 4:
            r = w.call(FindCoordinatorRequest(key_type=0, coordinator_keys=keys), version)
            found = {c.key: (c.error_code, c.node_id, c.port) for c in r.coordinators}
        else:
            found = {}
            for k in keys:
                r = w.call(FindCoordinatorRequest(key=k, key_type=0), version)
                found[k] = (r.error_code, r.node_id, r.port)
    for k in keys:
        node = coordinator_for(groups.state, k)
        assert found[k] == (0, node, groups.server(node).port)
    assert len({coordinator_for(groups.state, f"group-{i}") for i in range(30)}) == 3  # spread over the brokers


def test_find_coordinator_transactions_bad_key_type_and_a_stopped_broker(groups):
    with Wire(groups.addresses[0]) as w:
        r = w.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx-1"]), 4)
        assert r.coordinators[0].error_code == 0 and r.coordinators[0].node_id == coordinator_for(groups.state, "tx-1", 1)
        bad = w.call(FindCoordinatorRequest(key="g", key_type=7), 3)
        assert bad.error_code == E.INVALID_REQUEST and bad.node_id == -1
    group = next(f"g{i}" for i in range(100) if coordinator_for(groups.state, f"g{i}") == 2)
    groups.stop_broker(2)
    with Wire(groups.addresses[0]) as w:
        moved = w.call(FindCoordinatorRequest(key=group), 0)
    assert moved.error_code == 0 and moved.node_id in (1, 3)  # the partition's next replica leads


def test_group_requests_at_another_broker_get_not_coordinator(groups):
    node = coordinator_for(groups.state, "g")
    other = next(s for s in groups.servers if s.node_id != node)
    with Wire((other.host, other.port)) as w:
        assert w.call(join_req(), 9).error_code == E.NOT_COORDINATOR
        assert heartbeat(w, "m", 1) == E.NOT_COORDINATOR


# -- membership --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(0, 10))
def test_one_member_joins_syncs_heartbeats_and_leaves_every_version(groups, version):
    with at_coordinator(groups, "g") as w:
        r = join(w, version)
        assert r.error_code == 0 and r.generation_id == 1 and r.leader == r.member_id
        assert r.protocol_name == "range" and [m.member_id for m in r.members] == [r.member_id]
        sync_version = min(version, 5)
        s = w.call(sync(w, r.member_id, 1, {r.member_id: b"mine"}, version=sync_version), sync_version)
        assert s.error_code == 0 and s.assignment == b"mine"
        assert heartbeat(w, r.member_id, 1) == 0
        leave_version = min(version, 5)
        if leave_version >= 3:
            left = w.call(LeaveGroupRequest(group_id="g", members=[
                LeaveGroupRequest.MemberIdentity(member_id=r.member_id)]), leave_version)
            assert left.error_code == 0 and [m.error_code for m in left.members] == [0]
        else:
            assert w.call(LeaveGroupRequest(group_id="g", member_id=r.member_id), leave_version).error_code == 0
        assert heartbeat(w, r.member_id, 1) == E.UNKNOWN_MEMBER_ID
    group = groups.runtime.groups.get("g")
    assert group is not None and group.state.value == "Empty" and group.generation == 2


def test_a_join_rebalances_a_stable_group_and_the_leader_assigns(groups):
    with at_coordinator(groups, "g", "a") as a, at_coordinator(groups, "g", "b") as b:
        ra = join(a)
        assert a.call(sync(a, ra.member_id, 1, {ra.member_id: b"all"}), 5).assignment == b"all"
        first = b.call(join_req(), 9)
        assert first.error_code == E.MEMBER_ID_REQUIRED
        pending_b = b.request(join_req(member=first.member_id), 9)  # waits for a to rejoin
        until_rebalancing(a, ra.member_id, 1)
        ra2 = a.call(join_req(member=ra.member_id), 9)
        rb = b.receive(pending_b)
        assert ra2.generation_id == rb.generation_id == 2 and ra2.leader == rb.leader == ra.member_id
        assert {m.member_id for m in ra2.members} == {ra.member_id, first.member_id} and rb.members == []
        waiting_b = b.request(sync(b, rb.member_id, 2), 5)  # a follower's sync waits for the leader's
        sa = a.call(sync(a, ra.member_id, 2, {ra.member_id: b"p0", rb.member_id: b"p1"}), 5)
        assert sa.assignment == b"p0" and b.receive(waiting_b).assignment == b"p1"
        assert heartbeat(a, ra.member_id, 2) == heartbeat(b, rb.member_id, 2) == 0
        assert heartbeat(a, ra.member_id, 1) == E.ILLEGAL_GENERATION


def test_a_member_that_stops_heartbeating_is_removed_after_its_session_timeout(groups):
    with at_coordinator(groups, "g", "a") as a, at_coordinator(groups, "g", "b") as b:
        ra = join(a, session_ms=400)
        pending_b = b.request(join_req(member=b.call(join_req(session_ms=400), 9).member_id, session_ms=400), 9)
        until_rebalancing(a, ra.member_id, 1)
        a.call(join_req(member=ra.member_id, session_ms=400), 9)
        rb = b.receive(pending_b)
        a.call(sync(a, ra.member_id, 2, {}), 5)
        b.call(sync(b, rb.member_id, 2), 5)
        deadline = time.monotonic() + 5  # only a heartbeats now: b times out, the group rebalances
        while heartbeat(a, ra.member_id, 2) == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        ra3 = a.call(join_req(member=ra.member_id, session_ms=400), 9)
        assert ra3.generation_id == 3 and [m.member_id for m in ra3.members] == [ra.member_id]
        assert heartbeat(b, rb.member_id, 2) == E.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_rejoin_is_dropped_after_the_rebalance_timeout(groups):
    with at_coordinator(groups, "g", "a") as a, at_coordinator(groups, "g", "b") as b:
        ra = join(a, session_ms=5000, rebalance_ms=300)
        a.call(sync(a, ra.member_id, 1, {}), 5)
        started = time.monotonic()
        rb = join(b, session_ms=5000, rebalance_ms=300)  # a never rejoins: the join completes at the timeout
        assert rb.error_code == 0 and rb.generation_id == 2 and rb.leader == rb.member_id
        assert time.monotonic() - started >= 0.25
        assert heartbeat(a, ra.member_id, 1) == E.UNKNOWN_MEMBER_ID


def test_static_member_restart_does_not_rebalance_and_fences_the_old_id(groups):
    with at_coordinator(groups, "g", "a") as a, at_coordinator(groups, "g", "b") as b:
        ra = join(a, instance="a-1")
        assert ra.error_code == 0  # a static member joins at once, no MEMBER_ID_REQUIRED
        pending_b = b.request(join_req(instance="b-1"), 9)
        until_rebalancing(a, ra.member_id, 1, "a-1")
        a.call(join_req(member=ra.member_id, instance="a-1"), 9)
        rb = b.receive(pending_b)
        a.call(sync(a, ra.member_id, 2, {ra.member_id: b"A", rb.member_id: b"B"}, instance="a-1"), 5)
        assert b.call(sync(b, rb.member_id, 2, instance="b-1"), 5).assignment == b"B"
    with at_coordinator(groups, "g", "b") as b2:  # b restarts with the same instance id
        again = b2.call(join_req(instance="b-1"), 9)
        assert again.error_code == 0 and again.generation_id == 2 and again.member_id != rb.member_id
        assert b2.call(sync(b2, again.member_id, 2, instance="b-1"), 5).assignment == b"B"
        assert heartbeat(b2, rb.member_id, 2, instance="b-1") == E.FENCED_INSTANCE_ID
        assert heartbeat(b2, again.member_id, 2, instance="b-1") == 0
    assert groups.runtime.groups.get("g").generation == 2


def test_protocol_selection_and_inconsistent_protocols(groups):
    both = [JoinGroupRequest.Protocol(name="range", metadata=b"r"), JoinGroupRequest.Protocol(name="roundrobin", metadata=b"rr")]
    only_rr = [JoinGroupRequest.Protocol(name="roundrobin", metadata=b"rr2")]
    with at_coordinator(groups, "g", "a") as a, at_coordinator(groups, "g", "b") as b:
        ra = join(a, protocols=both)
        assert ra.protocol_name == "range"
        assert b.call(join_req(protocols=[JoinGroupRequest.Protocol(name="sticky", metadata=b"")]), 9).error_code \
            == E.INCONSISTENT_GROUP_PROTOCOL
        assert b.call(join_req(protocol_type="connect"), 9).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        pending_b = b.request(join_req(member=b.call(join_req(protocols=only_rr), 9).member_id, protocols=only_rr), 9)
        until_rebalancing(a, ra.member_id, 1)
        ra2 = a.call(join_req(member=ra.member_id, protocols=both), 9)
        assert b.receive(pending_b).protocol_name == ra2.protocol_name == "roundrobin"
        assert {m.metadata for m in ra2.members} == {b"rr", b"rr2"}


def test_membership_errors(groups):
    with at_coordinator(groups, "g") as w:
        assert w.call(join_req(session_ms=10), 9).error_code == E.INVALID_SESSION_TIMEOUT
        assert w.call(join_req(member="nobody"), 9).error_code == E.UNKNOWN_MEMBER_ID
        assert w.call(join_req(group=""), 9).error_code in (E.INVALID_GROUP_ID, E.NOT_COORDINATOR)
        r = join(w)
        assert w.call(sync(w, r.member_id, 7), 5).error_code == E.ILLEGAL_GENERATION
        assert w.call(sync(w, "nobody", 1), 5).error_code == E.UNKNOWN_MEMBER_ID
        assert heartbeat(w, "nobody", 1) == E.UNKNOWN_MEMBER_ID
        left = w.call(LeaveGroupRequest(group_id="g", members=[
            LeaveGroupRequest.MemberIdentity(member_id="nobody"),
            LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="unknown-instance"),
            LeaveGroupRequest.MemberIdentity(member_id=r.member_id)]), 5)
        assert [m.error_code for m in left.members] == [E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID, 0]


def test_group_max_size():
    with Cluster(groups=GroupSettings(max_size=1), system_topic_partitions=1) as c:
        with at_coordinator(c, "g") as a, at_coordinator(c, "g") as b:
            assert join(a).error_code == 0
            assert b.call(join_req(), 9).error_code == E.GROUP_MAX_SIZE_REACHED


def test_a_member_that_hangs_up_while_waiting_does_not_break_the_group(groups):
    with at_coordinator(groups, "g", "a") as a:
        ra = join(a)
        b = at_coordinator(groups, "g", "b")
        b.request(join_req(member=b.call(join_req(), 9).member_id), 9)
        until_rebalancing(a, ra.member_id, 1)
        b.close()  # gone while its join waits
        ra2 = a.call(join_req(member=ra.member_id), 9)
        assert ra2.error_code == 0 and ra2.generation_id == 2 and len(ra2.members) == 2


def test_cli_group_settings():
    from kcodec_broker.cli import group_settings
    s = group_settings(["min_session_timeout_ms=100", "max_size=3"])
    assert (s.min_session_timeout_ms, s.max_size, s.max_session_timeout_ms) == (100, 3, 1_800_000)
    for bad in ("max_size", "nope=1", "max_size=x"):
        with pytest.raises(ValueError):
            group_settings([bad])


@pytest.mark.parametrize("version", [5, 9])
def test_a_static_leader_restarts_without_a_rebalance(groups, version):
    with at_coordinator(groups, "g", "a") as a:
        ra = join(a, version, instance="lead")
        assert a.call(sync(a, ra.member_id, 1, {ra.member_id: b"A"}, instance="lead"), 5).assignment == b"A"
    with at_coordinator(groups, "g", "a") as a2:
        again = a2.call(join_req(instance="lead"), version)
        assert (again.error_code, again.generation_id, again.leader) == (0, 1, again.member_id)
        assert again.skip_assignment == (version >= 9) and len(again.members) == 1
        # what a pre-KIP-814 leader computes anyway is ignored: the group is stable, each keeps its own
        s = a2.call(sync(a2, again.member_id, 1, {again.member_id: b"other"}, instance="lead"), 5)
        assert s.assignment == b"A"
    assert groups.runtime.groups.get("g").generation == 1
