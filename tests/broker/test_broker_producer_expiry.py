"""Producer state expiry (Kafka's producer.id.expiration.ms): a partition forgets a producer with no
transaction open on it once its last timestamp is that old; time is driven through expire_producers(now)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from broker_wire import Wire
from test_broker_data import batch, produce
from txn_wire import Producer

from kcodec_broker import Cluster
from kcodec_broker.log import store
from kcodec.errors import ErrorCode as E
from kcodec.messages import DescribeProducersRequest, InitProducerIdRequest

HOUR = 3600 * 1000
# records stamped hours ahead pass Kafka 4's one-hour message.timestamp.after.max.ms
AHEAD = {"message.timestamp.after.max.ms": str(10 * HOUR)}


def _cluster(state: Path | None = None, expiration_ms: int = HOUR) -> Cluster:
    return Cluster(brokers=1, system_topic_partitions=1, state_file=state, producer_id_expiration_ms=expiration_ms)


@pytest.fixture
def one():
    with _cluster() as c:
        c.create_topic("t", 1, configs=AHEAD)
        yield c


def _now() -> int:
    return int(time.time() * 1000)


def _expire_at(c: Cluster, now: int) -> None:
    with c.state.lock:
        c.state.logs.expire_producers(now)


def _producers(w: Wire, topic: str = "t") -> dict[int, Any]:
    """DescribeProducers of partition 0: producer id -> its state."""
    r = w.call(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=topic, partition_indexes=[0])]), 0)
    return {s.producer_id: s for s in r.topics[0].partitions[0].active_producers}


def _init(w: Wire, pid: int = -1, epoch: int = -1) -> tuple[int, int, int]:
    r = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000, producer_id=pid,
                                     producer_epoch=epoch), 4)
    return r.error_code, r.producer_id, r.producer_epoch


def _send(w: Wire, pid: int, seq: int, ts: int, *values: bytes) -> tuple[int, int]:
    """(error, base offset) of an idempotent batch at epoch 0 whose records are timestamped ``ts``."""
    p = w.call(produce("t", 0, batch(*(values or (b"v",)), pid=pid, epoch=0, seq=seq, ts=ts)), 9)
    p = p.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def test_an_idle_producer_is_dropped_and_may_write_again(one):
    with Wire(one.addresses[0]) as w:
        _, pid, _ = _init(w)
        ts = _now()
        assert _send(w, pid, 0, ts, b"a", b"b") == (0, 0)
        assert _producers(w)[pid].last_timestamp == ts + 1  # the batch's max timestamp
        _expire_at(one, ts + 1 + HOUR - 1)
        assert pid in _producers(w)
        _expire_at(one, ts + 1 + HOUR)  # Kafka: now - last timestamp >= the expiration
        assert _producers(w) == {}
        # Kafka (KIP-360) takes any sequence from a producer it holds no state for, as a new one
        assert _send(w, pid, 2, _now()) == (0, 2)
        assert _producers(w)[pid].last_sequence == 2
        assert _send(w, pid, 4, _now())[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER  # its state is back


def test_the_last_timestamp_is_the_records_own(one):
    """Record timestamps count (CreateTime), not when the batch came: old ones expire at the first look,
    which such a write puts a second away (not at every request: a backfill would make each scan)."""
    with Wire(one.addresses[0]) as w:
        _, pid, _ = _init(w)
        assert _send(w, pid, 0, _now() - 2 * HOUR) == (0, 0)
        assert one.state.logs._producers_due <= _now() + 1000
        _expire_at(one, _now() + 1000)
        assert _producers(w) == {}


def test_an_open_transaction_keeps_its_producer(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert p.add_code("t", 0) == 0 and p.send("t", 0, b"a").error_code == 0
        _expire_at(one, _now() + 10 * HOUR)
        assert _producers(w)[p.pid].current_txn_start_offset == 0
        assert p.end(commit=True) == 0
        marker = _producers(w)[p.pid].last_timestamp  # the marker's timestamp is the last one
        _expire_at(one, marker + HOUR - 1)
        assert p.pid in _producers(w)
        _expire_at(one, marker + HOUR)
        assert _producers(w) == {}


def test_a_steady_writer_is_never_touched(one):
    with Wire(one.addresses[0]) as w:
        _, pid, _ = _init(w)
        t0 = _now()
        for i in range(6):
            ts = t0 + i * HOUR // 2
            assert _send(w, pid, i, ts) == (0, i)
            _expire_at(one, ts + HOUR - 1)
            assert _producers(w)[pid].last_sequence == i
            assert _send(w, pid, i, ts) == (0, i)  # a retry is still known as a duplicate


def test_the_check_waits_for_the_earliest_due_time(one, monkeypatch):
    """No scan of the partitions before a producer can be due, then one that finds the next due time."""
    scans = []
    real = store.drop_expired
    monkeypatch.setattr(store, "drop_expired", lambda *a: scans.append(1) or real(*a))
    with Wire(one.addresses[0]) as w:
        ts = _now()  # before the ids are given: they are not due before the producers either
        _, old, _ = _init(w)
        _, new, _ = _init(w)
        _send(w, old, 0, ts)
        _send(w, new, 0, ts + HOUR)
        for _ in range(20):
            _producers(w)  # every request runs the check
        _expire_at(one, ts + HOUR - 1)
        assert scans == []
        _expire_at(one, ts + HOUR)
        assert len(scans) == 1 and set(_producers(w)) == {new}
        _expire_at(one, ts + 2 * HOUR - 1)
        assert len(scans) == 1
        _expire_at(one, ts + 2 * HOUR)
        assert _producers(w) == {}


def test_a_restart_does_not_bring_an_expired_producer_back(tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    with _cluster(state) as c:
        c.create_topic("t", 1, configs=AHEAD)
        with Wire(c.addresses[0]) as w:
            _, idle, _ = _init(w)
            _, busy, _ = _init(w)
            ts = _now()
            assert _send(w, idle, 0, ts) == (0, 0)
            assert _send(w, busy, 0, ts + 2 * HOUR) == (0, 1)
    later = ts + HOUR + 1
    monkeypatch.setattr(store, "now_ms", lambda: later)  # the restart comes an hour later
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        assert set(_producers(w)) == {busy}
        assert _send(w, busy, 0, ts + 2 * HOUR) == (0, 1)  # its sequences were restored: a duplicate


def test_idle_producer_ids_are_forgotten(one):
    """The allocator forgets an id whose epoch is an expiration old and that no partition holds; naming it
    then gets a new id, as from Kafka (which gives idempotent producers a new id every time)."""
    ids = one.state.logs.producer_ids
    with Wire(one.addresses[0]) as w:
        _, gone, _ = _init(w)
        _, kept, _ = _init(w)
        assert _send(w, kept, 0, _now() + 2 * HOUR) == (0, 0)  # held by the partition past the expiry
        _expire_at(one, _now() + HOUR + 1000)
        assert gone not in ids.epochs and kept in ids.epochs
        error, pid, epoch = _init(w, gone, 0)
        assert error == 0 and pid > kept and epoch == 0
        assert _init(w, kept, 0) == (0, kept, 1)  # KIP-360's bump
        assert _init(w, pid + 1000, 0)[0] == E.INVALID_PRODUCER_ID_MAPPING  # never given


def test_the_expiration_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        Cluster(producer_id_expiration_ms=0)


def test_a_backfill_does_not_make_every_request_scan(one, monkeypatch):
    """A producer writing records stamped long ago expires at once; its writes put the next look a second
    away, so 20 of them in a row scan the partitions at most once a second, not 20 times."""
    scans = []
    real = store.drop_expired
    monkeypatch.setattr(store, "drop_expired", lambda *a: scans.append(1) or real(*a))
    with Wire(one.addresses[0]) as w:
        _, pid, _ = _init(w)
        start = time.monotonic()
        for seq in range(20):
            assert _send(w, pid, seq, _now() - 30 * 24 * HOUR)[0] == 0
        assert len(scans) <= 1 + int(time.monotonic() - start)
