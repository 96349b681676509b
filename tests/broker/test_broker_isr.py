"""The ISR's lag time (replica.lag.time.max.ms) and acks=all against a lagging follower in the ISR: the
produce waits until the follower catches up or the leader's ISR check drops it, then NONE or
NOT_ENOUGH_REPLICAS_AFTER_APPEND (min.insync.replicas); an ISR below min.insync.replicas refuses acks=all
with NOT_ENOUGH_REPLICAS; a produce still waiting at its timeout gets REQUEST_TIMED_OUT."""

from __future__ import annotations

import select
import time
from typing import Any, Iterator

import pytest
from broker_wire import Wire

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode as E
from kcodec.messages import DescribeConfigsRequest, ProduceRequest
from kcodec.records import BatchBuilder


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """Three brokers; t-0 on [1, 2, 3], led by 1, with a clock the test moves."""
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic("t", assignments={0: [1, 2, 3]}))
        c.state.clock = Clock()
        yield c


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def isr(c: Cluster) -> list[int]:
    with c.state.lock:
        return c.state.partition_leadership(c.topics()["t"], 0).isr


def produce_request(value: bytes, acks: int = -1, timeout_ms: int = 5000) -> ProduceRequest:
    batch = BatchBuilder()
    batch.append(None, value, timestamp=1)
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch.build())])])


def wire(c: Cluster, node: int = 1) -> Wire:
    server = c.server(node)
    return Wire((server.host, server.port))


def answered(w: Wire, seconds: float) -> bool:
    """Whether the broker sends anything on ``w`` within ``seconds``."""
    return bool(select.select([w.sock], [], [], seconds)[0])


def answer(resp: Any) -> Any:
    return resp.responses[0].partition_responses[0]


def produce(c: Cluster, value: bytes, acks: int = -1, timeout_ms: int = 5000) -> Any:
    with wire(c) as w:
        return answer(w.call(produce_request(value, acks, timeout_ms), 9))


def log_end(c: Cluster) -> int:
    return c.state.logs.log(c.topics()["t"].topic_id, 0).next_offset


def set_min_isr(c: Cluster, value: int) -> None:
    with c.state.lock:
        c.topics()["t"].configs["min.insync.replicas"] = str(value)


def test_a_lagging_follower_stays_in_the_isr_for_replica_lag_time_max_ms(cluster):
    clock = cluster.state.clock
    cluster.pause_replication(3)
    clock.ms += 60_000  # stalled a minute, but its log end is the leader's: caught up (isCaughtUp)
    assert not cluster.check_isr() and isr(cluster) == [1, 2, 3]
    assert produce(cluster, b"x", acks=1).error_code == 0
    clock.ms += 1  # lagging since it stalled, more than 30 s ago: the next check drops it
    assert cluster.check_isr() and isr(cluster) == [1, 2]
    cluster.resume_replication(3)  # caught up: back in
    assert isr(cluster) == [1, 2, 3]


def test_the_lag_counts_from_when_the_follower_last_caught_up(cluster):
    clock = cluster.state.clock
    cluster.pause_replication(3)
    assert produce(cluster, b"x", acks=1).error_code == 0
    clock.ms += 30_000
    assert not cluster.check_isr() and isr(cluster) == [1, 2, 3]  # exactly the lag time: still in sync
    clock.ms += 1
    assert cluster.check_isr() and isr(cluster) == [1, 2]


def test_acks_all_waits_for_a_lagging_follower_in_the_isr_until_it_catches_up(cluster):
    cluster.pause_replication(3)
    with wire(cluster) as w:
        sent = w.request(produce_request(b"x"), 9)
        assert not answered(w, 0.3)  # 3 is in the ISR and lacks the record
        assert log_end(cluster) == 1  # appended meanwhile
        cluster.resume_replication(3)
        got = answer(w.receive(sent))
    assert (got.error_code, got.base_offset) == (0, 0)


def acks_all_until_dropped(c: Cluster) -> Any:
    """An acks=all produce while 3 lags in the ISR: unanswered until the ISR check drops 3; its answer."""
    c.pause_replication(3)
    with wire(c) as w:
        sent = w.request(produce_request(b"x"), 9)
        assert not answered(w, 0.2)
        c.state.clock.ms += 30_001
        assert c.check_isr()
        return answer(w.receive(sent))


def test_acks_all_is_answered_when_the_isr_check_drops_the_follower(cluster):
    got = acks_all_until_dropped(cluster)
    assert (got.error_code, isr(cluster)) == (0, [1, 2])


def test_acks_all_fails_after_the_append_when_the_isr_fell_below_min_insync_replicas(cluster):
    set_min_isr(cluster, 3)
    got = acks_all_until_dropped(cluster)
    assert (got.error_code, got.base_offset, log_end(cluster)) == (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, 0, 1)


def test_acks_all_is_refused_before_the_append_while_the_isr_is_below_min_insync_replicas(cluster):
    set_min_isr(cluster, 3)
    cluster.pause_replication(3)
    assert produce(cluster, b"x", acks=1).error_code == 0  # acks=1 does not wait, nor check the ISR's size
    cluster.state.clock.ms += 30_001
    assert cluster.check_isr()
    got = produce(cluster, b"y")
    assert (got.error_code, log_end(cluster)) == (E.NOT_ENOUGH_REPLICAS, 1)  # not appended
    assert got.error_message == ("The size of the current ISR Set(1, 2) is insufficient to satisfy the min.isr "
                                 "requirement of 3 for partition t-0")
    set_min_isr(cluster, 5)  # above the replication factor: the replication factor counts
    cluster.resume_replication(3)
    assert produce(cluster, b"y").error_code == 0


def test_acks_all_times_out_while_the_follower_lags_in_the_isr(cluster):
    cluster.pause_replication(2)
    started = time.monotonic()
    got = produce(cluster, b"x", timeout_ms=300)
    assert (got.error_code, got.base_offset) == (E.REQUEST_TIMED_OUT, 0)
    assert 0.25 < time.monotonic() - started < 3


def test_the_leaders_check_the_isr_every_half_lag_time():
    with Cluster(brokers=2, system_topic_partitions=1, replica_lag_time_max_ms=200) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic("t", assignments={0: [1, 2]}))
        c.pause_replication(2)
        assert produce(c, b"x", acks=1).error_code == 0
        started = time.monotonic()
        got = produce(c, b"y")  # waits until the periodic check drops 2 (200 ms late at most, and 100 ms)
        assert (got.error_code, isr(c)) == (0, [1])
        assert time.monotonic() - started < 3


def test_the_setting_is_a_broker_config():
    with pytest.raises(ValueError, match="replica_lag_time_max_ms"):
        Cluster(replica_lag_time_max_ms=0)
    with Cluster(replica_lag_time_max_ms=1234) as c:
        with wire(c) as w:
            resp = w.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=4, resource_name="1", configuration_keys=["replica.lag.time.max.ms"])]), 4)
    assert [(e.name, e.value) for e in resp.results[0].configs] == [("replica.lag.time.max.ms", "1234")]


def test_the_cli_takes_the_setting(capsys):
    from kcodec.cli import main

    assert main(["broker", "--listen", "127.0.0.1:0", "--replica-lag-time-max-ms", "0"]) == 2
    assert "replica_lag_time_max_ms must be positive" in capsys.readouterr().err
