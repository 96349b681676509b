"""Leader epochs: rising at every leader change, the fencing checks of Fetch, ListOffsets and
OffsetForLeaderEpoch, the epoch history, the batches' partition leader epoch, and restarts."""

from __future__ import annotations

from typing import Any, Iterator, Optional

import pytest
from test_broker_data import batch, produce, values
from test_broker_elections import add_topic, elect, wire

from kcodec_broker import Cluster
from kcodec_broker.log import epochs as history
from kcodec.errors import ErrorCode as E
from kcodec.messages import (DescribeTopicPartitionsRequest, FetchRequest, ListOffsetsRequest, MetadataRequest,
                             OffsetForLeaderEpochRequest)
from kcodec.records import iter_batches

FENCED, UNKNOWN, NOT_LEADER = E.FENCED_LEADER_EPOCH, E.UNKNOWN_LEADER_EPOCH, E.NOT_LEADER_OR_FOLLOWER


@pytest.fixture
def auto() -> Iterator[Cluster]:
    """Leaders follow the first live replica (auto.leader.rebalance.enable)."""
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2], [2, 3], [3, 1]])
        yield c


@pytest.fixture
def kept() -> Iterator[Cluster]:
    with Cluster(brokers=3, auto_leader_rebalance=False, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2, 3], [2, 3, 1]])
        yield c


def described(c: Cluster, topic: str = "t", node: Optional[int] = None) -> list[tuple[int, int]]:
    """(leader, leader epoch) of each partition, as Metadata v12 says; DescribeTopicPartitions agrees."""
    with wire(c, node or c.controller_id) as w:
        meta = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name=topic)]), 12).topics[0].partitions
        dtp = w.call(DescribeTopicPartitionsRequest(topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)]),
                     0).topics[0].partitions
    out = [(p.leader_id, p.leader_epoch) for p in meta]
    assert [(p.leader_id, p.leader_epoch) for p in dtp] == out
    return out


def fetch(c: Cluster, node: int, epoch: int, version: int = 12, offset: int = 0, index: int = 0, **kw: Any) -> Any:
    topic = c.topics()["t"]
    req = FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, session_epoch=kw.pop("session_epoch", -1),
                       topics=[FetchRequest.FetchTopic(topic="t", topic_id=topic.topic_id, partitions=[
                           FetchRequest.FetchPartition(partition=index, fetch_offset=offset,
                                                       partition_max_bytes=1 << 20, current_leader_epoch=epoch)])],
                       **kw)
    with wire(c, node) as w:
        return w.call(req, version)


def list_offsets(c: Cluster, node: int, epoch: int, ts: int = -1, version: int = 8) -> Any:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts,
                                                                      current_leader_epoch=epoch)])])
    with wire(c, node) as w:
        return w.call(req, version).topics[0].partitions[0]


def epoch_end(c: Cluster, node: int, current: int, wanted: int, version: int = 4) -> Any:
    req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic="t", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=current, leader_epoch=wanted)])])
    with wire(c, node) as w:
        return w.call(req, version).topics[0].partitions[0]


def ended(c: Cluster, node: int, current: int, wanted: int) -> tuple[int, int, int]:
    p = epoch_end(c, node, current, wanted)
    return p.error_code, p.leader_epoch, p.end_offset


def found(c: Cluster, node: int, current: int, ts: int) -> tuple[int, int]:
    p = list_offsets(c, node, current, ts)
    assert p.error_code == 0
    return p.offset, p.leader_epoch


def write(c: Cluster, *vals: bytes, ts: int = 0) -> int:
    leader = c.state.leader(c.topics()["t"], 0)
    with wire(c, leader) as w:
        p = w.call(produce("t", 0, batch(*vals, ts=ts)), 9).responses[0].partition_responses[0]
    assert p.error_code == 0
    return p.base_offset


# -- the history itself (Kafka's LeaderEpochFileCache) ----------------------------------------------------
def test_history_assign_truncate_and_lookups():
    h: history.Entries = []
    for epoch, start in [(0, 0), (0, 3), (2, 5), (3, 5), (5, 9)]:
        history.assign(h, epoch, start)
    assert h == [[0, 0], [3, 5], [5, 9]]  # epoch 2 wrote nothing before 3 began at the same offset
    assert history.end_offset_for(h, 5, 12) == (5, 12)  # the latest epoch ends at the log end
    assert history.end_offset_for(h, 0, 12) == (0, 5)
    assert history.end_offset_for(h, 2, 12) == (0, 5)  # an epoch without data: the one before it
    assert history.end_offset_for(h, 4, 12) == (3, 9)
    assert history.end_offset_for(h, 6, 12) == history.end_offset_for(h, -1, 12) == (-1, -1)
    assert [history.epoch_for_offset(h, o) for o in (0, 4, 5, 8, 9, 99)] == [0, 0, 3, 3, 5, 5]
    history.truncate_from_start(h, 6)
    assert h == [[3, 6], [5, 9]] and history.earliest_epoch(h, 6) == 3
    assert history.end_offset_for(h, 1, 12) == (1, 6)  # below every epoch held: the first start
    assert history.with_current(h, 7, 12) == [[3, 6], [5, 9], [7, 12]] and h == [[3, 6], [5, 9]]
    assert history.with_current([[1, 4]], 2, 4) == [[2, 4]]  # epoch 1's data was all deleted
    assert history.with_current(h, None, 12) == h


# -- epochs rising ---------------------------------------------------------------------------------------
def test_epochs_start_at_zero_and_rise_at_every_leader_change(auto):
    assert described(auto) == [(1, 0), (2, 0), (3, 0)]
    auto.stop_broker(1)
    assert described(auto) == [(2, 1), (2, 0), (3, 0)]  # t-2 lost a follower: no new epoch
    auto.stop_broker(3)
    assert described(auto) == [(2, 1), (2, 0), (-1, 1)]  # offline is a leader change too
    auto.start_broker(1)
    assert described(auto) == [(1, 2), (2, 0), (1, 2)]
    auto.start_broker(3)
    assert described(auto) == [(1, 2), (2, 0), (3, 3)]
    auto.create_topic("later", 1, 1)
    assert described(auto, "later") == [(auto.state.leader(auto.topics()["later"], 0), 0)]


def test_kept_leaders_change_epoch_only_when_the_leader_moves(kept):
    kept.stop_broker(3)  # a follower of both: ISRs shrink, no leader moves
    assert described(kept) == [(1, 0), (2, 0)]
    kept.stop_broker(1)
    assert described(kept) == [(2, 1), (2, 0)]
    kept.start_broker(1)  # back in the ISR as a follower
    kept.start_broker(3)
    assert described(kept) == [(2, 1), (2, 0)]
    assert elect(kept, 2, {"t": [0, 1]}).replica_election_results[0].partition_result[0].error_code == 0
    assert described(kept) == [(1, 2), (2, 0)]


def test_an_unclean_election_and_a_clean_return_are_new_epochs(kept):
    add_topic(kept, "u", [[1, 2]])
    kept.stop_broker(2)
    kept.stop_broker(1)  # offline: epoch 1
    assert described(kept, "u", node=3) == [(-1, 1)]
    kept.start_broker(2)
    assert elect(kept, 2, {"u": [0]}, election_type=1).replica_election_results[0].partition_result[0].error_code == 0
    assert described(kept, "u", node=3) == [(2, 2)]
    kept.stop_broker(2)
    assert described(kept, "u", node=3) == [(-1, 3)]
    kept.start_broker(2)  # the last in-sync replica returns: a clean election
    assert described(kept, "u", node=3) == [(2, 4)]


# -- fencing --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(9, 19))
def test_fetch_checks_the_current_leader_epoch(auto, version):
    auto.stop_broker(1)
    auto.start_broker(1)  # t-0: leader 1 at epoch 2
    assert fetch(auto, 1, 2, version).responses[0].partitions[0].error_code == 0
    assert fetch(auto, 1, -1, version).responses[0].partitions[0].error_code == 0  # unchecked
    old, new = fetch(auto, 1, 1, version), fetch(auto, 1, 3, version)
    assert old.responses[0].partitions[0].error_code == FENCED
    assert new.responses[0].partitions[0].error_code == UNKNOWN
    # a follower checks the epoch first (Partition.getLocalLog), then that it leads (below v11) or, from v11
    # (KIP-392: followers serve consumers), that it is in sync
    assert fetch(auto, 2, 1, version).responses[0].partitions[0].error_code == FENCED
    assert fetch(auto, 2, 3, version).responses[0].partitions[0].error_code == UNKNOWN
    follower = fetch(auto, 2, 2, version)
    assert follower.responses[0].partitions[0].error_code == (NOT_LEADER if version < 11 else 0)
    for resp in (old, follower) if version < 11 else (old,):  # KIP-951: where the leader is, from v16
        p = resp.responses[0].partitions[0]
        if version >= 16:
            assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 2)
            assert [(n.node_id, n.port) for n in resp.node_endpoints] == [(1, auto.server(1).port)]
        else:
            assert p.current_leader.leader_id == -1 and not resp.node_endpoints


@pytest.mark.parametrize("version", range(4, 9))
def test_fetch_before_v9_carries_no_epoch_to_check(auto, version):
    auto.stop_broker(1)
    auto.start_broker(1)
    assert fetch(auto, 1, 0, version).responses[0].partitions[0].error_code == 0


def test_fetch_sessions_keep_the_epoch_each_partition_was_fetched_with(auto):
    full = fetch(auto, 1, 0, 12, session_epoch=0)
    assert full.session_id and full.responses[0].partitions[0].error_code == 0
    auto.stop_broker(1)
    auto.start_broker(1)  # t-0 is at epoch 2; the session still holds 0
    with wire(auto, 1) as w:
        inc = w.call(FetchRequest(replica_id=-1, max_bytes=1 << 20, session_id=full.session_id, session_epoch=1,
                                  topics=[]), 12)
    assert [(p.partition_index, p.error_code) for p in inc.responses[0].partitions] == [(0, FENCED)]


@pytest.mark.parametrize("version", range(0, 12))
def test_list_offsets_checks_the_epoch_from_v4(auto, version):
    auto.stop_broker(1)
    auto.start_broker(1)
    write(auto, b"a")
    cases = {2: 0, -1: 0, 1: FENCED, -5: FENCED, 3: UNKNOWN} if version >= 4 else {1: 0, 3: 0}
    for epoch, code in cases.items():
        p = list_offsets(auto, 1, epoch, version=version)
        assert p.error_code == code, epoch
        if not code:
            assert (p.offset, p.leader_epoch) == ((1, 2 if version >= 4 else -1) if version else (-1, -1))
            assert list(p.old_style_offsets) == ([1] if version == 0 else [])
    assert list_offsets(auto, 2, 1, version=version).error_code == (FENCED if version >= 4 else NOT_LEADER)


@pytest.mark.parametrize("version", range(0, 5))
def test_offset_for_leader_epoch_checks_the_epoch_from_v2(auto, version):
    auto.stop_broker(1)
    auto.start_broker(1)
    cases = {2: 0, -1: 0, 1: FENCED, -3: FENCED, 3: UNKNOWN} if version >= 2 else {0: 0, 7: 0}
    for epoch, code in cases.items():
        assert epoch_end(auto, 1, epoch, 2, version).error_code == code, epoch
    assert epoch_end(auto, 3, 2, 2, version).error_code == NOT_LEADER
    assert epoch_end(auto, 2, 0, 2, version).error_code == (FENCED if version >= 2 else NOT_LEADER)


def test_produce_names_the_leader_and_its_epoch_from_v10(auto):
    auto.stop_broker(1)
    auto.start_broker(1)
    with wire(auto, 2) as w:
        for version in (9, 10, 11):
            resp = w.call(produce("t", 0, batch(b"x")), version)
            p = resp.responses[0].partition_responses[0]
            assert p.error_code == NOT_LEADER
            if version >= 10:
                assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 2)
                assert [(n.node_id, n.host, n.port) for n in resp.node_endpoints] == [(1, *auto.addresses[0])]


# -- the history, the batches ---------------------------------------------------------------------------
def test_history_after_several_leader_changes(kept):
    write(kept, b"a", b"b", ts=1000)             # epoch 0: offsets 0-1
    kept.stop_broker(1)                           # epoch 1, leader 2
    write(kept, b"c", ts=3000)                    # epoch 1: offset 2
    kept.start_broker(1)
    elect(kept, 2, {"t": [0]})                    # epoch 2, leader 1: nothing written
    kept.stop_broker(1)                           # epoch 3, leader 2
    write(kept, b"d", b"e", ts=2000)              # epoch 3: offsets 3-4
    assert described(kept)[0] == (2, 3)
    assert [ended(kept, 2, 3, e) for e in range(5)] == [(0, 0, 2), (0, 1, 3), (0, 1, 3), (0, 3, 5), (0, -1, -1)]
    assert ended(kept, 2, -1, -1) == (0, -1, -1)
    # ListOffsets: the log end in the current epoch, a record's offset in its batch's epoch
    got = {ts: found(kept, 2, 3, ts) for ts in (-1, -2, -3, 2500, 1001)}
    assert got == {-1: (5, 3), -2: (0, 0), -3: (2, 1), 2500: (2, 1), 1001: (1, 0)}
    # the batches carry the epoch they were written in; the CRC (from the attributes on) still checks
    with wire(kept, 2) as w:
        records = w.call(FetchRequest(replica_id=-1, max_bytes=1 << 20, session_epoch=-1, topics=[
            FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=3)])]),
            12).responses[0].partitions[0].records
    assert [(b.base_offset, b.partition_leader_epoch) for b in iter_batches(records, verify_crc=True)] == [
        (0, 0), (2, 1), (3, 3)]
    assert values(records) == [b"a", b"b", b"c", b"d", b"e"]
    # DeleteRecords moves the history's start: an epoch below it ends where the log now starts
    with kept.state.lock:
        kept.state.logs.delete_records(kept.topics()["t"].topic_id, 0, 3)
    assert ended(kept, 2, 3, 0) == (0, 0, 3)
    assert found(kept, 2, 3, -2) == (3, 3)


def test_a_partition_without_data_answers_for_its_current_epoch(auto):
    auto.stop_broker(1)
    assert ended(auto, 2, 1, 1) == (0, 1, 0)
    assert ended(auto, 2, 1, 0) == (0, 0, 0)  # epoch 0 wrote nothing: below the first epoch held


# -- restarts -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rebalance", [True, False])
def test_epochs_leaders_and_history_survive_a_restart(tmp_path, rebalance):
    path = tmp_path / "state.json"
    with Cluster(brokers=3, state_file=path, auto_leader_rebalance=rebalance, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2, 3]])
        write(c, b"a")
        c.stop_broker(1)  # epoch 1, leader 2; the cluster stops with broker 1 down
        write(c, b"b")
    with Cluster(brokers=3, state_file=path, auto_leader_rebalance=rebalance, system_topic_partitions=1) as c:
        # both: broker 2 still leads, at the epoch it had (auto: until the next rebalance, below)
        assert described(c) == [(2, 1)]
        leader, epoch = described(c)[0]
        assert c.state.partition_leadership(c.topics()["t"], 0).isr == [1, 2, 3]  # caught up: back in sync
        assert ended(c, leader, epoch, 0) == (0, 0, 1)
        assert ended(c, leader, epoch, epoch) == (0, epoch, 2)
        assert fetch(c, leader, epoch - 1).responses[0].partitions[0].error_code == FENCED
        write(c, b"c")
        with wire(c, leader) as w:
            records = w.call(FetchRequest(replica_id=-1, max_bytes=1 << 20, session_epoch=-1, topics=[
                FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1)])]),
                12).responses[0].partitions[0].records
        assert [b.partition_leader_epoch for b in iter_batches(records)] == [0, 1, epoch]


def test_with_auto_rebalance_the_saved_leaders_stand_until_the_next_rebalance(tmp_path):
    """Kafka's leaders stand in its metadata log until the periodic preferred election runs; kcodec runs
    it at the first broker stop or start after the cluster's own start, or at a preferred election."""
    from test_broker_elections import elect, results
    path = tmp_path / "state.json"

    def restarted() -> Cluster:
        return Cluster(brokers=3, state_file=path, system_topic_partitions=1)

    with restarted() as c:
        add_topic(c, "t", [[1, 2], [1, 3], [3, 1]])
        c.stop_broker(1)  # the cluster stops with broker 1 down: 2 and 3 lead at epoch 1
        assert described(c) == [(2, 1), (3, 1), (3, 0)]
    for _ in range(2):  # the cluster's own start, even a second one, runs no rebalance
        with restarted() as c:
            assert described(c) == [(2, 1), (3, 1), (3, 0)]
            assert c.state.partition_leadership(c.topics()["t"], 0).isr == [1, 2]  # every live replica
    with restarted() as c:
        assert results(elect(c, 2, {"t": [0]})) == {("t", 0): (E.NONE, None)}  # the preferred replica leads
        assert described(c) == [(1, 2), (3, 1), (3, 0)]
        c.stop_broker(2)  # a broker stops: the rebalance runs for every partition
        assert described(c) == [(1, 2), (1, 2), (3, 0)]
    with restarted() as c:  # saved leaders that are the first live replicas: nothing moves
        assert described(c) == [(1, 2), (1, 2), (3, 0)]
        c.stop_broker(1)  # a saved leader that stops hands over as any leader does
        assert described(c) == [(2, 3), (3, 3), (3, 0)]


def test_a_state_file_from_before_epochs_loads_at_epoch_zero(tmp_path):
    import json
    path = tmp_path / "state.json"
    with Cluster(brokers=2, state_file=path, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        c.stop_broker(1)
    data = json.loads(path.read_text())
    assert data["topics"][[t["name"] for t in data["topics"]].index("t")]["leadership"] == {"epochs": [[1, 2]]}
    assert [t.get("leadership") for t in data["topics"] if t["name"] == "t"] == [{"epochs": [[1, 2]]}]
    for t in data["topics"]:
        del t["leadership"]
    path.write_text(json.dumps(data))
    with Cluster(brokers=2, state_file=path, system_topic_partitions=1) as c:
        assert described(c) == [(1, 0)]



def test_transaction_markers_carry_the_leaders_epoch():
    from txn_wire import Producer
    with Cluster(brokers=2, system_topic_partitions=1) as c:
        coordinator = c.state.leader(c.topics()["__transaction_state"], 0)
        add_topic(c, "t", [[coordinator, 3 - coordinator]])
        c.stop_broker(coordinator)
        c.start_broker(coordinator)
        assert described(c)[0] == (coordinator, 2)
        with wire(c, coordinator) as w:
            p = Producer(w, "tx")
            assert p.add_code("t", 0) == 0 and p.send("t", 0, b"v").error_code == 0 and p.end(commit=True) == 0
        records = fetch(c, coordinator, 2).responses[0].partitions[0].records
    assert [(b.is_control, b.partition_leader_epoch) for b in iter_batches(records, verify_crc=True)] == [
        (False, 2), (True, 2)]


def test_a_rewritten_journal_restores_the_history_from_its_log_start():
    from kcodec_broker.log import PartitionLog
    from kcodec.records import BatchBuilder

    def stamped(epoch: int, count: int) -> bytearray:
        b = BatchBuilder(partition_leader_epoch=epoch)
        for i in range(count):
            b.append(None, b"v", timestamp=1)
        return bytearray(b.build())

    plog = PartitionLog()
    plog.delete_records(3)  # the rewrite's log start entry comes before the batches it keeps
    plog.restore(stamped(2, 5), 0, 5, 1, 0)
    plog.restore(stamped(4, 1), 5, 1, 1, 0)
    assert plog.epochs == [[2, 3], [4, 5]] and plog.log_start == 3
