"""Fetching from followers (KIP-392) over the wire: the rack-aware replica selector's preferred read replica,
followers serving consumers' Fetch v11+ (epochs, ranges, read_committed, sessions, long polls), ListOffsets
staying with the leader, and the fallback when the preferred follower stops or stops being a replica."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import pytest
from broker_wire import Wire
from txn_wire import Producer

from kcodec_broker import Cluster
from kcodec_broker.groups.placement import coordinator_for
from kcodec_broker.replicas import LEADER_SELECTOR, RACK_AWARE, replica_selector
from kcodec.errors import ErrorCode as E
from kcodec.messages import CreateTopicsRequest, DeleteRecordsRequest, FetchRequest, ListOffsetsRequest, ProduceRequest
from kcodec.records import BatchBuilder, iter_batches

RACKS = {1: "a", 2: "b", 3: "c"}
READ_COMMITTED = 1
TRANSACTION_KEY = 1


def add_topic(c: Cluster, name: str, replicas: list[list[int]]) -> None:
    with c.state.lock:
        c.state.add_topic(c.state.plan_topic(name, assignments=dict(enumerate(replicas))))


@pytest.fixture
def racked() -> Iterator[Cluster]:
    """Three brokers in racks a, b, c with the rack-aware selector; t-0 on [1, 2], leader 1."""
    with Cluster(brokers=3, racks=RACKS, replica_selector=RACK_AWARE, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        yield c


def wire(c: Cluster, node: int, client_id: str = "kcodec-tests") -> Wire:
    server = c.server(node)
    return Wire((server.host, server.port), client_id=client_id)


def request(offset: int = 0, rack: str = "", epoch: int = -1, topic: str = "t", **kw: Any) -> FetchRequest:
    kw.setdefault("max_wait_ms", 0)
    kw.setdefault("session_epoch", -1)
    return FetchRequest(replica_id=-1, max_bytes=1 << 20, rack_id=rack, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=offset,
                                                             partition_max_bytes=1 << 20,
                                                             current_leader_epoch=epoch)])], **kw)


def fetch(c: Cluster, node: int, version: int = 12, **kw: Any) -> Any:
    """Partition 0's answer to a consumer's Fetch sent to ``node``."""
    req = request(**kw)
    if version >= 13:
        req.topics[0].topic_id = c.topics()[req.topics[0].topic].topic_id
    with wire(c, node) as w:
        return w.call(req, version).responses[0].partitions[0]


def values(records: Any) -> list[bytes]:
    return [r.value for b in iter_batches(records or b"") if not b.is_control for r in b]


def write(c: Cluster, *vals: bytes, topic: str = "t", acks: int = -1) -> None:
    builder = BatchBuilder()
    for v in vals:
        builder.append(None, v, timestamp=1)
    req = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    with wire(c, c.state.leader(c.topics()[topic], 0)) as w:
        assert w.call(req, 9).responses[0].partition_responses[0].error_code == 0


# -- the selector ---------------------------------------------------------------------------------------
def test_the_setting_takes_kafkas_class_names_or_short_names():
    assert replica_selector(None) is None and replica_selector("") is None
    assert replica_selector("rack-aware") == replica_selector(RACK_AWARE) == RACK_AWARE
    assert replica_selector("leader") == replica_selector("LeaderSelector") == LEADER_SELECTOR
    with pytest.raises(ValueError, match="unknown replica selector"):
        Cluster(replica_selector="org.example.Nearest")


def test_the_cli_refuses_an_unknown_selector():
    out = subprocess.run([sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0",
                          "--replica-selector", "nearest"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "unknown replica selector" in out.stderr, out.stderr


def test_the_cli_sets_the_selector_and_the_racks():
    proc = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", "--brokers", "2",
                             "--rack", "1=a", "--rack", "2=b", "--replica-selector", "rack-aware"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "... bootstrap H:P,H:P, PLAINTEXT, ..."
        addresses = [(h, int(p)) for h, _, p in (a.rpartition(":") for a in
                                                 line.split("bootstrap ")[1].split(", ")[0].split(","))]
        with Wire(addresses[0]) as w:
            created = w.call(CreateTopicsRequest(timeout_ms=1000, topics=[CreateTopicsRequest.CreatableTopic(
                name="t", num_partitions=-1, replication_factor=-1, assignments=[
                    CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])])]), 5)
            assert created.topics[0].error_code == 0
            assert w.call(request(rack="b"), 12).responses[0].partitions[0].preferred_read_replica == 2
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("selector", [None, "leader"])
def test_without_the_rack_aware_selector_leaders_name_no_other_replica(selector):
    # Kafka's default (no replica.selector.class) and its LeaderSelector: consumers stay on leaders
    with Cluster(brokers=3, racks=RACKS, replica_selector=selector, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        write(c, b"x")
        p = fetch(c, 1, rack="b")
        assert (p.error_code, p.preferred_read_replica, values(p.records)) == (0, -1, [b"x"])


@pytest.mark.parametrize("version", range(11, 19))
def test_the_leader_names_the_in_sync_follower_of_the_consumers_rack(racked, version):
    write(racked, b"x", b"y")
    topic = racked.topics()["t"]
    started = time.monotonic()
    with wire(racked, 1) as w:
        req = request(rack="b", max_wait_ms=4000, min_bytes=1 << 20, isolation_level=READ_COMMITTED)
        if version >= 13:
            req.topics[0].topic_id = topic.topic_id
        p = w.call(req, version).responses[0].partitions[0]
    assert time.monotonic() - started < 2  # answered at once, as Kafka answers a preferred read replica
    assert (p.error_code, p.preferred_read_replica, p.records or b"") == (0, 2, b"")
    assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (2, 2, 0)
    assert p.aborted_transactions is None  # Kafka skips the read: no list even for read_committed


def test_the_leader_reads_itself_for_its_own_rack_no_rack_or_a_rack_without_a_replica(racked):
    write(racked, b"x")
    for rack in ("a", "", "c", "nowhere"):
        p = fetch(racked, 1, rack=rack)
        assert (p.error_code, p.preferred_read_replica, values(p.records)) == (0, -1, [b"x"]), rack
    # an offset out of the log's range is out of every replica's range: the error, not a replica
    assert fetch(racked, 1, rack="b", offset=5).error_code == E.OFFSET_OUT_OF_RANGE
    # below v11 a Fetch carries no rack: the leader serves
    assert values(fetch(racked, 1, version=10, rack="b").records) == [b"x"]


def test_the_first_in_sync_live_follower_of_the_rack_in_assignment_order():
    with Cluster(brokers=3, racks={1: "a", 2: "b", 3: "b"}, replica_selector=RACK_AWARE,
                 system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 3, 2]])
        assert fetch(c, 1, rack="b").preferred_read_replica == 3  # both tie on one shared log: the first
        c.stop_broker(3)  # out of the ISR: no longer named
        assert fetch(c, 1, rack="b").preferred_read_replica == 2
        c.stop_broker(2)
        assert fetch(c, 1, rack="b").preferred_read_replica == -1
        c.start_broker(3)
        assert fetch(c, 1, rack="b").preferred_read_replica == 3


# -- followers serving consumers ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(4, 19))
def test_a_follower_serves_consumers_from_v11(racked, version):
    write(racked, b"x", b"y")
    p = fetch(racked, 2, version, rack="b" if version >= 11 else "")
    if version < 11:  # no client metadata: leaders only, as before KIP-392
        assert p.error_code == E.NOT_LEADER_OR_FOLLOWER
    else:  # a follower names no replica: it reads, up to the high watermark
        assert (p.error_code, p.preferred_read_replica, values(p.records)) == (0, -1, [b"x", b"y"])
        assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (2, 2, 0)
    assert fetch(racked, 3, version).error_code == E.NOT_LEADER_OR_FOLLOWER  # not a replica


def test_a_follower_checks_the_leader_epoch_and_the_range(racked):
    for v in (b"0", b"1", b"2"):
        write(racked, v)
    racked.stop_broker(1)
    racked.start_broker(1)  # t-0: leader 1 at epoch 2, follower 2
    assert fetch(racked, 2, epoch=1).error_code == E.FENCED_LEADER_EPOCH
    assert fetch(racked, 2, epoch=3).error_code == E.UNKNOWN_LEADER_EPOCH
    assert values(fetch(racked, 2, epoch=2, offset=1).records) == [b"1", b"2"]
    assert fetch(racked, 2, epoch=2, offset=3).records in (None, b"")  # at the end: nothing yet
    assert fetch(racked, 2, epoch=2, offset=4).error_code == E.OFFSET_OUT_OF_RANGE
    with wire(racked, 1) as w:
        w.call(DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=2)])]), 2)
    p = fetch(racked, 2, offset=1)  # below the new log start: Kafka's failed read names no offsets
    assert (p.error_code, p.log_start_offset, p.high_watermark) == (E.OFFSET_OUT_OF_RANGE, -1, -1)


@contextmanager
def open_transaction() -> Iterator[tuple[Cluster, Producer, int, int]]:
    """A cluster whose t-0 is led by the coordinator of transaction "tx" and followed by another broker,
    holding b"plain" and then b"open", in the transaction left open: (cluster, producer, leader, follower)."""
    with Cluster(brokers=3, racks=RACKS, replica_selector=RACK_AWARE, system_topic_partitions=1) as c:
        coordinator = coordinator_for(c.state, "tx", TRANSACTION_KEY)
        follower = next(b for b in c.state.broker_ids if b != coordinator)
        add_topic(c, "t", [[coordinator, follower]])
        write(c, b"plain")
        with wire(c, coordinator) as w:
            producer = Producer(w, "tx")
            assert producer.add_code("t", 0) == 0
            assert producer.send("t", 0, b"open").error_code == 0
            yield c, producer, coordinator, follower


def test_a_follower_reads_committed_up_to_the_last_stable_offset():
    with open_transaction() as (c, producer, _, follower):
        p = fetch(c, follower, isolation_level=READ_COMMITTED)
        assert (values(p.records), p.last_stable_offset, p.high_watermark) == ([b"plain"], 1, 2)
        assert values(fetch(c, follower).records) == [b"plain", b"open"]  # read_uncommitted: the whole log
        assert producer.end(commit=False) == 0
        p = fetch(c, follower, isolation_level=READ_COMMITTED)
        assert values(p.records) == [b"plain", b"open"]  # the aborted batch, with the transaction to drop it
        assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(producer.pid, 1)]


def isr(c: Cluster, topic: str = "t") -> list[int]:
    with c.state.lock:
        return c.state.partition_leadership(c.topics()[topic], 0).isr


def test_a_replica_out_of_the_isr_serves_its_lagging_copy():
    # leaders kept as Kafka's controller keeps them: t-0 on [2, 3] goes offline with 2 its last in-sync
    # replica; 3, stopped before "y", returns out of the ISR with a copy that lacks it
    with Cluster(brokers=3, racks=RACKS, replica_selector=RACK_AWARE, auto_leader_rebalance=False,
                 system_topic_partitions=1) as c:
        add_topic(c, "t", [[2, 3]])
        write(c, b"x")
        c.stop_broker(3)
        write(c, b"y")
        c.stop_broker(2)
        c.start_broker(3)
        assert (c.state.leader(c.topics()["t"], 0), isr(c)) == (-1, [2])
        p = fetch(c, 3, rack="c")  # Kafka's follower reads its local log, up to the high watermark it learned
        assert (p.error_code, values(p.records), p.high_watermark, p.last_stable_offset) == (0, [b"x"], 1, 1)
        p = fetch(c, 3, rack="c", offset=1)  # at its end: nothing, no error
        assert (p.error_code, p.records or b"") == (0, b"")
        assert fetch(c, 3, rack="c", offset=2).error_code == E.OFFSET_OUT_OF_RANGE  # past its log end
        assert fetch(c, 3, version=10, offset=0).error_code == E.NOT_LEADER_OR_FOLLOWER  # no client metadata
        c.start_broker(2)  # the clean election: 2 leads, 3 catches up and rejoins the ISR
        assert isr(c) == [2, 3]
        p = fetch(c, 3, rack="c", epoch=-1)
        assert (values(p.records), p.high_watermark) == ([b"x", b"y"], 2)


def lag_out(c: Cluster) -> None:
    """Move the cluster's clock past replica.lag.time.max.ms and run the leaders' ISR check."""
    now = c.state.clock()
    c.state.clock = lambda: now + c.state.replica_lag_time_max_ms + 1
    assert c.check_isr()


def test_a_paused_follower_leaves_the_isr_once_it_lagged_for_replica_lag_time_max_ms(racked):
    write(racked, b"x")
    racked.pause_replication(2)
    assert isr(racked) == [1, 2]  # caught up: still in sync, as Kafka's isCaughtUp (its log end is the leader's)
    assert fetch(racked, 1, rack="b").preferred_read_replica == 2
    write(racked, b"y", acks=1)
    assert isr(racked) == [1, 2] and not racked.check_isr()  # lagging, but not for replica.lag.time.max.ms yet
    lag_out(racked)
    assert isr(racked) == [1]
    p = fetch(racked, 1, rack="b")  # the selector names only in-sync followers: the leader reads itself
    assert (p.preferred_read_replica, values(p.records)) == (-1, [b"x", b"y"])
    p = fetch(racked, 2, rack="b")  # the lagging follower: its own copy
    assert (p.error_code, values(p.records), p.high_watermark, p.last_stable_offset) == (0, [b"x"], 1, 1)
    assert fetch(racked, 2, rack="b", offset=2).error_code == E.OFFSET_OUT_OF_RANGE
    racked.resume_replication(2)
    assert isr(racked) == [1, 2]
    assert fetch(racked, 1, rack="b").preferred_read_replica == 2
    assert values(fetch(racked, 2, rack="b", offset=1).records) == [b"y"]
    with pytest.raises(ValueError, match="no broker 7"):
        racked.pause_replication(7)


def test_a_long_poll_on_a_lagging_follower_waits_out_the_leaders_appends(racked):
    write(racked, b"x")
    racked.pause_replication(2)
    write(racked, b"y", acks=1)
    with wire(racked, 2) as w:
        sent = w.request(request(1, rack="b", max_wait_ms=400, min_bytes=1), 12)
        time.sleep(0.1)
        write(racked, b"z", acks=1)  # appended past the copy: nothing for the follower to send
        p = w.receive(sent).responses[0].partitions[0]
        assert (p.error_code, p.records or b"", p.high_watermark) == (0, b"", 1)
        sent = w.request(request(1, rack="b", max_wait_ms=4000, min_bytes=1), 12)
        time.sleep(0.2)
        started = time.monotonic()
        racked.resume_replication(2)  # caught up: the waiting fetch is answered at once
        p = w.receive(sent).responses[0].partitions[0]
    assert values(p.records) == [b"y", b"z"] and time.monotonic() - started < 2


def test_a_broker_restarted_before_catching_up_neither_leads_nor_is_in_sync(racked):
    write(racked, b"x")
    racked.stop_broker(1)  # 2 leads, epoch 1
    write(racked, b"y")
    racked.pause_replication(1)
    racked.start_broker(1)  # back with a copy that lacks "y": the first replica, but not in sync
    topic = racked.topics()["t"]
    assert (racked.state.leader(topic, 0), isr(racked), racked.state.leader_epoch(topic, 0)) == (2, [2], 1)
    p = fetch(racked, 1, rack="a", epoch=1)
    assert (p.error_code, values(p.records), p.high_watermark) == (0, [b"x"], 1)
    racked.resume_replication(1)  # caught up: in sync, and the preferred replica leads again
    assert (racked.state.leader(topic, 0), isr(racked), racked.state.leader_epoch(topic, 0)) == (1, [1, 2], 2)


def test_a_lagging_follower_reads_committed_up_to_its_own_last_stable_offset():
    with open_transaction() as (c, producer, coordinator, follower):
        c.pause_replication(follower)
        assert producer.end(commit=True) == 0  # the marker is past the follower's copy
        assert fetch(c, coordinator, isolation_level=READ_COMMITTED).last_stable_offset == 3
        p = fetch(c, follower, isolation_level=READ_COMMITTED)  # the transaction is still open in its copy
        assert (values(p.records), p.last_stable_offset, p.high_watermark) == ([b"plain"], 1, 2)


def test_list_offsets_stays_with_the_leader(racked):
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    codes = []
    for node in (1, 2):
        with wire(racked, node) as w:
            codes.append(w.call(req, 8).topics[0].partitions[0].error_code)
    assert codes == [0, E.NOT_LEADER_OR_FOLLOWER]


# -- sessions and long polls on a follower ----------------------------------------------------------------
def incremental(w: Wire, session_id: int, epoch: int, rack: str = "b", offset: Optional[int] = None) -> list[Any]:
    """An incremental fetch of the session, moving t-0's fetch offset to ``offset`` if given."""
    moved = request(offset, rack).topics if offset is not None else []
    resp = w.call(FetchRequest(replica_id=-1, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
                               rack_id=rack, topics=moved), 12)
    assert resp.error_code == 0
    return [p for t in resp.responses for p in t.partitions]


def test_fetch_sessions_on_a_follower(racked):
    write(racked, b"x")
    with wire(racked, 2) as w:
        full = w.call(request(rack="b", session_epoch=0), 12)
        assert full.session_id and values(full.responses[0].partitions[0].records) == [b"x"]
        assert incremental(w, full.session_id, 1, offset=1) == []  # nothing new
        write(racked, b"y")
        (p,) = incremental(w, full.session_id, 2)  # the session keeps the offset it was given
        assert (p.high_watermark, values(p.records)) == (2, [b"y"])


def test_a_leaders_session_always_carries_the_preferred_replica(racked):
    # Kafka's CachedPartition: a partition with a preferred read replica is in every incremental response
    with wire(racked, 1) as w:
        full = w.call(request(rack="b", session_epoch=0), 12)
        assert full.responses[0].partitions[0].preferred_read_replica == 2
        (p,) = incremental(w, full.session_id, 1)
        assert (p.error_code, p.preferred_read_replica) == (0, 2)
        assert incremental(w, full.session_id, 2, rack="a") == []  # the leader's own rack: nothing changed


def test_a_long_poll_on_a_follower_is_answered_by_a_write(racked):
    with wire(racked, 2) as w:
        sent = w.request(request(rack="b", max_wait_ms=4000, min_bytes=1), 12)
        time.sleep(0.2)
        started = time.monotonic()
        write(racked, b"late")
        p = w.receive(sent).responses[0].partitions[0]
    assert values(p.records) == [b"late"] and time.monotonic() - started < 2


# -- falling back ---------------------------------------------------------------------------------------------
def test_when_the_preferred_follower_stops_the_leader_serves_again(racked):
    write(racked, b"x")
    assert fetch(racked, 1, rack="b").preferred_read_replica == 2
    racked.stop_broker(2)
    p = fetch(racked, 1, rack="b")
    assert (p.preferred_read_replica, values(p.records)) == (-1, [b"x"])
    racked.start_broker(2)
    assert fetch(racked, 1, rack="b").preferred_read_replica == 2


def test_a_follower_reassigned_away_answers_not_leader_and_is_no_longer_named(racked):
    write(racked, b"x")
    with racked.state.lock:
        racked.state.reassign(racked.topics()["t"], 0, [1, 3])
    assert racked.topics()["t"].replicas[0] == [1, 3]
    assert fetch(racked, 2, rack="b").error_code == E.NOT_LEADER_OR_FOLLOWER
    assert fetch(racked, 1, rack="b").preferred_read_replica == -1
    assert fetch(racked, 1, rack="c").preferred_read_replica == 3
    assert values(fetch(racked, 3, rack="c").records) == [b"x"]


def test_the_cluster_counts_the_batches_each_broker_served_each_client(racked):
    write(racked, b"x")
    for node, client in ((1, "near-a"), (2, "near-b"), (2, "near-b")):
        with wire(racked, node, client) as w:
            assert w.call(request(rack=client[-1]), 12).responses[0].partitions[0].error_code == 0
    with wire(racked, 1, "redirected") as w:  # named the follower: no records, nothing counted
        assert w.call(request(rack="b"), 12).responses[0].partitions[0].preferred_read_replica == 2
    served = racked.fetched_batches()
    assert (served[1]["near-a"], served[2]["near-b"], served[1]["redirected"]) == (1, 2, 0)
