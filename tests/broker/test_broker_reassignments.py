"""AlterPartitionReassignments v0-1 and ListPartitionReassignments v0 over the wire: reassignments that
complete at once, ones a stopped broker keeps pending, cancelling, Kafka's errors, and the state file."""

from __future__ import annotations

from typing import Any, Iterator, Optional

import pytest
from broker_wire import Wire, authenticated

from kcodec_broker import Cluster
from kcodec_broker.state import ClusterState
from kcodec.errors import ErrorCode as E
from kcodec.messages import (AlterPartitionReassignmentsRequest, CreatePartitionsRequest,
                             ListPartitionReassignmentsRequest, MetadataRequest)

Topic = AlterPartitionReassignmentsRequest.ReassignableTopic
Part = AlterPartitionReassignmentsRequest.ReassignablePartition
Listed = ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics
Target = dict[tuple[str, int], Optional[list[int]]]


def add_topic(c: Cluster, name: str, replicas: list[list[int]]) -> None:
    with c.state.lock:
        c.state.add_topic(c.state.plan_topic(name, assignments=dict(enumerate(replicas))))


@pytest.fixture
def c() -> Iterator[Cluster]:
    with Cluster(brokers=4, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2], [2, 3]])
        yield c


@pytest.fixture
def kept() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=1, auto_leader_rebalance=False) as c:
        add_topic(c, "t", [[1, 2]])
        yield c


def alter_request(targets: Target, allow_rf_change: bool = True, timeout_ms: int = 30000) -> Any:
    topics: dict[str, list] = {}
    for (name, index), replicas in targets.items():
        topics.setdefault(name, []).append(Part(partition_index=index, replicas=replicas))
    return AlterPartitionReassignmentsRequest(timeout_ms=timeout_ms, allow_replication_factor_change=allow_rf_change,
                                              topics=[Topic(name=n, partitions=p) for n, p in topics.items()])


def alter(w: Wire, targets: Target, version: int = 1, **kw) -> tuple[Any, dict]:
    r = w.call(alter_request(targets, **kw), version)
    return r, {(t.name, p.partition_index): (p.error_code, p.error_message) for t in r.responses for p in t.partitions}


def listed(w: Wire, topics: Optional[dict[str, list[int]]] = None) -> dict[tuple[str, int], tuple[list, list, list]]:
    req = ListPartitionReassignmentsRequest(timeout_ms=1000, topics=None if topics is None else [
        Listed(name=n, partition_indexes=p) for n, p in topics.items()])
    r = w.call(req, 0)
    assert r.error_code == 0, r
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


def metadata(w: Wire, name: str = "t", index: int = 0) -> tuple[int, list[int], list[int]]:
    p = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name=name)]), 12).topics[0].partitions[index]
    return p.leader_id, list(p.replica_nodes), list(p.isr_nodes)


def test_a_reassignment_to_running_brokers_completes_at_once(c):
    with Wire(c.addresses[0]) as w:
        r, results = alter(w, {("t", 0): [3, 4]})
        assert r.error_code == 0 and r.error_message is None and r.allow_replication_factor_change
        assert results == {("t", 0): (E.NONE, None)}
        assert listed(w) == {}
        assert metadata(w) == (3, [3, 4], [3, 4])  # the leader left the list: the first new replica leads
        assert c.topics()["t"].replicas == [[3, 4], [2, 3]]


def epoch(w: Wire, index: int = 0) -> int:
    return w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 12).topics[0].partitions[index].leader_epoch


def test_a_reassignment_that_moves_the_leader_or_drops_a_replica_is_a_new_leader_epoch(c):
    with Wire(c.addresses[0]) as w:
        assert epoch(w) == 0
        alter(w, {("t", 0): [1, 2, 3]})  # only adds, the leader stays: the same epoch
        assert metadata(w)[0] == 1 and epoch(w) == 0
        alter(w, {("t", 0): [1, 3]})  # drops 2, the leader stays: one epoch on (PartitionChangeBuilder)
        assert metadata(w) == (1, [1, 3], [1, 3]) and epoch(w) == 1
        alter(w, {("t", 0): [3, 4]})  # the leader leaves the list too: still one epoch for one change
        assert metadata(w)[0] == 3 and epoch(w) == 2
    c.stop_broker(4)
    with Wire(c.addresses[0]) as w:
        alter(w, {("t", 1): [4, 3]})  # pending (4 is stopped): replicas 4, 3, 2; 2, in sync, still leads
        assert metadata(w, index=1)[0] == 2 and epoch(w, 1) == 0
    c.start_broker(4)  # completes: 2 leaves, 4 leads, one epoch on
    with Wire(c.addresses[0]) as w:
        assert metadata(w, index=1)[0] == 4 and epoch(w, 1) == 1


def test_with_auto_rebalance_a_pending_reassignment_keeps_an_in_sync_leader_until_the_preferred_one_syncs(c):
    """Kafka's elections while a reassignment is pending (replicas: the target, then the removed ones): the
    preferred replica, the target's first, leads once in sync; until then the current leader stays while
    in sync, even one being removed; a leader that stops hands over to the first in-sync replica."""
    c.stop_broker(4)
    with Wire(c.addresses[2]) as w:
        alter(w, {("t", 0): [4, 2, 3]})  # pending: 4 is stopped; 1 is being removed but in sync: it leads
        assert (metadata(w), epoch(w)) == ((1, [4, 2, 3, 1], [2, 3, 1]), 0)
    c.stop_broker(1)  # the leader stops: the first in-sync replica of the list
    with Wire(c.addresses[2]) as w:
        assert (metadata(w)[0], epoch(w)) == (2, 1)
    c.stop_broker(2)
    c.start_broker(2)  # back in sync, but neither preferred (4) nor the leader (3): 3 stays
    with Wire(c.addresses[2]) as w:
        assert (metadata(w)[0], epoch(w)) == (3, 2)
        alter(w, {("t", 0): [2, 4, 3]})  # a new target whose first replica is in sync: it leads
        assert (metadata(w), epoch(w)) == ((2, [2, 4, 3, 1], [2, 3]), 3)
        assert listed(w) == {("t", 0): ([2, 4, 3, 1], [3, 4], [1])}
    c.start_broker(4)  # completes: 1 leaves the list, 2 still leads, one epoch on
    with Wire(c.addresses[2]) as w:
        assert (metadata(w), epoch(w)) == ((2, [2, 4, 3], [2, 4, 3]), 4) and listed(w) == {}


def test_dropping_a_follower_fences_clients_that_hold_the_old_epoch(kept):
    from test_broker_epochs import epoch_end, fetch, list_offsets
    kept.stop_broker(3)
    with Wire(kept.addresses[0]) as w:
        alter(w, {("t", 0): [1, 3]})  # pending: replicas 1, 3, 2, none dropped yet, the same leader
        assert metadata(w) == (1, [1, 3, 2], [1, 2]) and epoch(w) == 0
    kept.start_broker(3)  # completes: 2 leaves, 1 still leads, one epoch on
    with Wire(kept.addresses[0]) as w:
        assert metadata(w) == (1, [1, 3], [1, 3]) and epoch(w) == 1
    assert fetch(kept, 1, 0).responses[0].partitions[0].error_code == E.FENCED_LEADER_EPOCH
    assert list_offsets(kept, 1, 0).error_code == E.FENCED_LEADER_EPOCH
    assert epoch_end(kept, 1, 0, 0).error_code == E.FENCED_LEADER_EPOCH
    assert fetch(kept, 1, 1).responses[0].partitions[0].error_code == E.NONE
    assert list_offsets(kept, 1, 1).error_code == E.NONE


def test_cancelling_drops_the_added_replicas_and_is_a_new_leader_epoch(kept):
    kept.stop_broker(3)
    with Wire(kept.addresses[0]) as w:
        alter(w, {("t", 0): [1, 2, 3]})  # pending: 3 is being added
        assert epoch(w) == 0
        alter(w, {("t", 0): None})  # 3 leaves the list: as a completion that drops one, one epoch on
        assert metadata(w) == (1, [1, 2], [1, 2]) and epoch(w) == 1
        alter(w, {("t", 0): [2, 1]})  # a reordering drops none and keeps the leader: the same epoch
        assert metadata(w) == (1, [2, 1], [2, 1]) and epoch(w) == 1


def test_a_stopped_target_keeps_it_pending_until_it_returns(c):
    c.stop_broker(4)
    with Wire(c.addresses[0]) as w:
        assert alter(w, {("t", 0): [4, 1]})[1] == {("t", 0): (E.NONE, None)}
        pending = {("t", 0): ([4, 1, 2], [4], [2])}  # the target, then the replicas it drops (sorted)
        assert listed(w) == pending and listed(w, {"t": [0, 1, 7], "nope": [0]}) == pending
        assert listed(w, {"t": [1]}) == {}
        leader, replicas, isr = metadata(w)
        assert replicas == [4, 1, 2] and isr == [1, 2] and leader == 1  # Metadata shows the whole set
        # the count it is headed for is the target's: the same count is no change of replication factor
        assert alter(w, {("t", 0): [4, 2]}, allow_rf_change=False)[1] == {("t", 0): (E.NONE, None)}
        assert listed(w) == {("t", 0): ([4, 2, 1], [4], [1])}
    c.start_broker(4)
    with Wire(c.addresses[0]) as w:
        assert listed(w) == {}
        assert metadata(w) == (4, [4, 2], [4, 2])


def test_cancelling_puts_the_replicas_back(c):
    c.stop_broker(4)
    with Wire(c.addresses[0]) as w:
        alter(w, {("t", 1): [3, 4]})
        assert listed(w) == {("t", 1): ([3, 4, 2], [4], [2])}
        assert alter(w, {("t", 1): None})[1] == {("t", 1): (E.NONE, None)}
        assert listed(w) == {} and metadata(w, index=1)[1] == [3, 2]  # the adding replica left, the order stays
        assert alter(w, {("t", 1): None})[1] == {
            ("t", 1): (E.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")}
    c.start_broker(4)  # nothing completes: the reassignment is gone
    assert c.topics()["t"].replicas[1] == [3, 2]


def test_kafkas_errors_per_partition(c):
    with Wire(c.addresses[1]) as w:
        _, results = alter(w, {("t", 0): [], ("t", 1): [3, 3], ("t", 5): [1], ("nope", 0): [1],
                               ("t", 2): [1, 9, 7]})
        assert results == {
            ("t", 0): (E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
            ("t", 1): (E.INVALID_REPLICA_ASSIGNMENT,
                       "The manual partition assignment includes the broker 3 more than once."),
            ("t", 5): (E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:5."),
            ("nope", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope."),
            ("t", 2): (E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:2."),
        }
        # the brokers are checked in id order: 7 before 9
        assert alter(w, {("t", 1): [1, 9, 7]})[1] == {("t", 1): (
            E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 7, but no such broker "
            "is registered.")}
        assert c.topics()["t"].replicas == [[1, 2], [2, 3]]  # nothing changed


def test_v1_refuses_a_replication_factor_change_when_asked(c):
    with Wire(c.addresses[0]) as w:
        r, results = alter(w, {("t", 0): [1, 2, 3], ("t", 1): [4]}, allow_rf_change=False)
        assert not r.allow_replication_factor_change
        assert results == {("t", 0): (E.INVALID_REPLICATION_FACTOR, "The replication factor is changed from 2 to 3"),
                           ("t", 1): (E.INVALID_REPLICATION_FACTOR, "The replication factor is changed from 2 to 1")}
        assert alter(w, {("t", 0): [1, 2, 3]}, version=0)[1] == {("t", 0): (E.NONE, None)}
        assert metadata(w)[1] == [1, 2, 3]  # v0 has no such option (the codec refuses to send false): allowed


def test_request_level_errors():
    with Cluster(brokers=2, users={"admin": "a", "alice": "b"}, acls=["alice:Describe:topic:*"],
                 super_users=["admin"], system_topic_partitions=1) as c:
        add_topic(c, "t", [[1]])
        with authenticated(c, "alice", "b") as w:
            r, results = alter(w, {("t", 0): [2]})
            assert (r.error_code, r.error_message) == (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
            assert results == {("t", 0): (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")}
            lr = w.call(ListPartitionReassignmentsRequest(timeout_ms=1000, topics=None), 0)
            assert lr.error_code == E.CLUSTER_AUTHORIZATION_FAILED and lr.topics == []
        with authenticated(c, "admin", "a") as w:
            r, results = alter(w, {("t", 0): [2]}, timeout_ms=0)  # the deadline passed before it ran
            assert r.error_code == E.REQUEST_TIMED_OUT and results == {("t", 0): (E.REQUEST_TIMED_OUT, None)}
            assert alter(w, {("t", 0): [2]})[1] == {("t", 0): (E.NONE, None)}
        assert c.topics()["t"].replicas == [[2]]


def test_without_forwarding_only_the_controller_answers():
    with Cluster(brokers=2, forward_admin=False, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1]])
        other = next(s for s in c.servers if s.node_id != c.controller_id)
        with Wire((other.host, other.port)) as w:
            r, results = alter(w, {("t", 0): [2]})
            assert r.error_code == E.NOT_CONTROLLER and results == {}
            assert w.call(ListPartitionReassignmentsRequest(timeout_ms=1000), 0).error_code == E.NOT_CONTROLLER


def test_kept_leadership_stays_until_completion_then_moves(kept):
    kept.stop_broker(3)
    with Wire(kept.addresses[0]) as w:
        alter(w, {("t", 0): [3, 2]})
        assert metadata(w) == (1, [3, 2, 1], [2, 1])  # pending: the leader stays, the ISR in replica order
    kept.start_broker(3)
    with Wire(kept.addresses[0]) as w:
        # complete: 1 left the list, so the first in-sync replica of the new list leads
        assert metadata(w) == (3, [3, 2], [3, 2]) and listed(w) == {}
        alter(w, {("t", 0): [2, 3]})  # a reordering completes at once and keeps an in-sync leader
        assert metadata(w) == (3, [2, 3], [2, 3])


def test_a_pending_reassignment_survives_a_restart(tmp_path):
    path = tmp_path / "state.json"
    with Cluster(brokers=3, state_file=path, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        c.stop_broker(3)
        with Wire(c.addresses[0]) as w:
            alter(w, {("t", 0): [1, 3]})
    saved = ClusterState([1, 2, 3], state_file=path, system_topic_partitions=1).topics["t"]
    assert saved.replicas == [[1, 3, 2]] and saved.reassigning[0].adding == [3]
    assert saved.reassigning[0].removing == [2]
    with Cluster(brokers=3, state_file=path, system_topic_partitions=1) as c:  # every broker runs: it completes
        assert c.topics()["t"].replicas == [[1, 3]] and not c.topics()["t"].reassigning
    assert ClusterState([1, 2, 3], state_file=path).topics["t"].replicas == [[1, 3]]


def test_create_partitions_takes_the_replication_factor_of_partition_0s_whole_list(c):
    """As KRaft's createPartitions: partition 0's replica count, the replicas being added and removed
    included; no refusal while a reassignment is in progress."""
    def grow(w: Wire, count: int, assignments: Optional[list[list[int]]] = None) -> tuple[int, Optional[str]]:
        A = CreatePartitionsRequest.CreatePartitionsAssignment
        given = None if assignments is None else [A(broker_ids=a) for a in assignments]
        r = w.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="t", count=count, assignments=given)], timeout_ms=1000), 3).results[0]
        return r.error_code, r.error_message

    c.stop_broker(4)
    with Wire(c.addresses[0]) as w:
        alter(w, {("t", 1): [4, 1]})  # pending: partition 1 lists 4, 1, 2, 3; partition 0 still two
        assert grow(w, 3) == (E.NONE, None) and len(c.topics()["t"].replicas[2]) == 2
        alter(w, {("t", 0): [3, 4]})  # pending: partition 0 lists 3, 4, 1, 2
        assert listed(w)[("t", 0)] == ([3, 4, 1, 2], [3, 4], [1, 2])
        assert grow(w, 4) == (E.NONE, None) and len(c.topics()["t"].replicas[3]) == 4
        assert grow(w, 5, [[1, 2]]) == (E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes a "
                                        "partition with 2 replica(s), but this is not consistent with previous "
                                        "partitions, which have 4 replica(s).")
        assert grow(w, 5, [[2, 1, 4, 3]]) == (E.NONE, None) and c.topics()["t"].replicas[4] == [2, 1, 4, 3]
    c.start_broker(4)  # both complete; the partitions added meanwhile keep the lists they got
    assert [len(r) for r in c.topics()["t"].replicas] == [2, 2, 2, 4, 4]


def test_create_partitions_refuses_an_assignment_whose_brokers_are_all_stopped(c):
    c.stop_broker(3)
    c.stop_broker(4)
    with Wire(c.addresses[0]) as w:
        r = w.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="t", count=3, assignments=[CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=[4, 3])])],
            timeout_ms=1000), 3).results[0]
    assert (r.error_code, r.error_message) == (
        E.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition assignment for partition 2 are "
        "fenced or in controlled shutdown.")
    assert len(c.topics()["t"].replicas) == 2


def test_cancelling_when_only_added_replicas_are_in_sync_needs_unclean_elections(c):
    c.stop_broker(3)
    with Wire(c.addresses[0]) as w:
        alter(w, {("t", 1): [3, 4]})  # 3 is stopped: pending, replicas [3, 4, 2] adding 4, ISR [4, 2]
        c.stop_broker(2)  # now only 4, an added replica, is in sync
        assert alter(w, {("t", 1): None})[1] == {("t", 1): (
            E.INVALID_REPLICA_ASSIGNMENT, "Unable to revert partition assignment for t:1 because it would require "
            "an unclean leader election.")}
        with c.state.lock:
            c.state.set_configs(c.state.topics["t"], {"unclean.leader.election.enable": "true"})
        assert alter(w, {("t", 1): None})[1] == {("t", 1): (E.NONE, None)}
        assert listed(w) == {} and c.topics()["t"].replicas[1] == [3, 2]  # 3, the first, joins the ISR
