"""A lagging replica that becomes leader leads with its copy: the log is truncated to the copy's end (the
records it lacked are lost, as on Kafka), the epoch history loses the epochs from there on, the old leader
and the other followers follow the truncated log, and consumers past the new end get OFFSET_OUT_OF_RANGE.
Also the log store's truncation itself: producer and transaction state rebuilt, journaled for restarts."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
from test_broker_data import batch, fetch, produce, values
from test_broker_elections import add_topic, elect, wire

from kcodec_broker import Cluster
from kcodec_broker.log import LogStore
from kcodec.errors import ErrorCode as E
from kcodec.messages import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kcodec.records import iter_batches

UNCLEAN = 1


@pytest.fixture
def kept() -> Iterator[Cluster]:
    """Leaders kept as Kafka's controller keeps them; t-0 on [1, 2], led by 1."""
    with Cluster(brokers=3, auto_leader_rebalance=False, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        yield c


def write(c: Cluster, *vals: bytes, acks: int = -1) -> Any:
    with wire(c, c.state.leader(c.topics()["t"], 0)) as w:
        return w.call(produce("t", 0, batch(*vals), acks=acks), 9).responses[0].partition_responses[0]


def read(c: Cluster, node: int, offset: int = 0) -> Any:
    with wire(c, node) as w:
        return w.call(fetch("t", 0, offset), 12).responses[0].partitions[0]


def epoch_end(c: Cluster, node: int, wanted: int) -> tuple[int, int, int]:
    req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic="t", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=-1, leader_epoch=wanted)])])
    with wire(c, node) as w:
        p = w.call(req, 4).topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def latest(c: Cluster, node: int) -> tuple[int, int]:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    with wire(c, node) as w:
        p = w.call(req, 8).topics[0].partitions[0]
    return p.offset, p.leader_epoch


def lag_out(c: Cluster) -> None:
    now = c.state.clock()
    c.state.clock = lambda: now + c.state.replica_lag_time_max_ms + 1
    assert c.check_isr()


def leadership(c: Cluster) -> tuple[int, list[int], int]:
    with c.state.lock:
        topic = c.topics()["t"]
        return c.state.leader(topic, 0), c.state.partition_leadership(topic, 0).isr, c.state.leader_epoch(topic, 0)


def test_an_unclean_election_of_a_lagging_replica_truncates_the_log_to_its_copy(kept):
    assert write(kept, b"x").error_code == 0
    kept.pause_replication(2)
    assert write(kept, b"y", b"z", acks=1).error_code == 0  # offsets 1 and 2: only on broker 1
    lag_out(kept)
    kept.stop_broker(1)  # offline: 2 is out of the ISR (epoch 1)
    assert leadership(kept) == (-1, [1], 1)
    assert values(read(kept, 2).records) == [b"x"]  # the follower serves its copy (KIP-392)
    assert elect(kept, 2, {"t": [0]}, election_type=UNCLEAN, node=2) \
        .replica_election_results[0].partition_result[0].error_code == 0
    assert leadership(kept) == (2, [2], 2)
    p = read(kept, 2)
    assert (p.error_code, values(p.records), p.high_watermark) == (0, [b"x"], 1)  # y and z are lost
    assert read(kept, 2, offset=3).error_code == E.OFFSET_OUT_OF_RANGE  # a consumer that had read them
    assert epoch_end(kept, 2, 0) == (0, 0, 1)  # epoch 0 ends where the new leader's log ended
    assert latest(kept, 2) == (1, 2)
    got = write(kept, b"w")  # the new leader's epoch starts at its copy's end
    assert (got.error_code, got.base_offset) == (0, 1)
    assert [b.partition_leader_epoch for b in iter_batches(read(kept, 2).records)] == [0, 2]
    kept.start_broker(1)  # the old leader truncates to the new leader's log and follows: in sync
    assert leadership(kept) == (2, [1, 2], 2)
    assert values(read(kept, 2).records) == [b"x", b"w"]


def test_a_leader_elected_while_lagging_in_the_isr_loses_what_it_lacked():
    # the first live in-sync replica leads (auto rebalance); 2 lags within replica.lag.time.max.ms, so it is
    # still in the ISR: a clean election on Kafka too, which loses the acks=1 records it lacked
    with Cluster(brokers=2, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2]])
        assert write(c, b"x").error_code == 0
        c.pause_replication(2)
        assert write(c, b"y", acks=1).error_code == 0
        assert leadership(c)[:2] == (1, [1, 2])
        c.stop_broker(1)
        assert leadership(c) == (2, [2], 1)
        assert (values(read(c, 2).records), read(c, 2, offset=2).error_code) == ([b"x"], E.OFFSET_OUT_OF_RANGE)
        c.start_broker(1)  # back, truncated: in sync, and it leads again (epoch 2) without y
        assert leadership(c) == (1, [1, 2], 2)
        assert values(read(c, 1).records) == [b"x"]


def test_a_caught_up_replica_elected_truncates_nothing(kept):
    assert write(kept, b"x").error_code == 0
    kept.pause_replication(2)  # paused, but nothing appended since: its copy is the whole log
    kept.stop_broker(1)  # a clean election: 2 is in the ISR
    assert leadership(kept) == (2, [2], 1)
    assert values(read(kept, 2).records) == [b"x"]


def test_the_store_rebuilds_producer_and_transaction_state_and_journals_the_truncation(tmp_path):
    data = tmp_path / "state.json.data"
    topic = uuid.uuid4()
    store = LogStore(data)

    def append(value: bytes, seq: int, leader_epoch: int = 0) -> int:
        code, base, _ = store.append(topic, 0, batch(value, pid=7, epoch=0, seq=seq), False, -1, -1, 0, leader_epoch)
        assert code == 0
        return base

    append(b"a", 0)
    append(b"b", 1)
    append(b"c", 2, leader_epoch=1)
    assert store.log(topic, 0).epochs == [[0, 0], [1, 2]]
    store.truncate(topic, 0, 1)
    plog = store.log(topic, 0)
    assert (plog.next_offset, plog.epochs, plog.producers[7].last_sequence) == (1, [[0, 0]], 0)
    assert store.append(topic, 0, batch(b"b2", pid=7, epoch=0, seq=1), False, -1, -1, 0, 0)[:2] == (0, 1)
    store.flush(sync=False)
    store.close()
    store = LogStore(data)
    store.load({topic})
    plog = store.log(topic, 0)
    assert plog.next_offset == 2
    assert [r.value for b in plog.batches for r in next(iter_batches(bytes(b)))] == [b"a", b"b2"]
    store.close()
