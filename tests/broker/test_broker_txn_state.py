"""The transaction coordinator's state across restarts (``state_file``): producer ids and epochs, open
transactions with their partitions, pending offsets and timeouts, journaled in the data file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from broker_wire import Wire
from txn_wire import READ_COMMITTED, Producer, fetch

from kcodec_broker import Cluster
from kcodec_broker.log import store
from kcodec_broker.log.datafile import TXN_STATE, DataFile, entry, txn_state_entry
from kcodec.errors import ErrorCode as E
from kcodec.messages import InitProducerIdRequest, OffsetFetchRequest
from kcodec.records import filter_aborted, iter_batches


def _cluster(state: Path) -> Cluster:
    return Cluster(brokers=1, system_topic_partitions=1, state_file=state)


def _part(resp):
    return resp.responses[0].partitions[0]


def _committed(w: Wire, topic: str = "t", partition: int = 0) -> list[bytes]:
    part = _part(w.call(fetch(topic, partition, 0, READ_COMMITTED), 12))
    return [r.value for b in filter_aborted(iter_batches(part.records), part.aborted_transactions)
            if not b.is_control for r in b]


def _offset(w: Wire, group: str) -> tuple[int, int]:
    r = w.call(OffsetFetchRequest(group_id=group, require_stable=True, topics=[
        OffsetFetchRequest.Topic(name="t", partition_indexes=[0])]), 7)
    return r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].committed_offset


def _init(w: Wire, pid: int = -1, epoch: int = -1, tid: str = "tx") -> tuple[int, int, int]:
    r = w.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=pid,
                                     producer_epoch=epoch), 4)
    return r.error_code, r.producer_id, r.producer_epoch


def _leave_open(state: Path, value: bytes, partitions: int = 1, timeout_ms: int = 60_000,
                then: Callable[[Producer], bool] = lambda p: True) -> Producer:
    """Run a cluster on ``state`` whose producer "tx" leaves a transaction open: ``value`` written to
    partition 0 of topic t, then whatever ``then`` does; the producer as it was when the cluster stopped."""
    with _cluster(state) as c:
        c.create_topic("t", partitions)
        with Wire(c.addresses[0]) as w:
            p = Producer(w, "tx", timeout_ms=timeout_ms)
            assert p.add_code("t", 0) == 0 and p.send("t", 0, value).error_code == 0
            assert then(p)
    return p


def test_an_open_transaction_resumes_after_a_restart_and_commits(tmp_path):
    state = tmp_path / "state.json"
    p = _leave_open(state, b"a", partitions=2,
                    then=lambda p: p.add_offsets("g") == 0 and p.commit_offsets("g", "t", {0: 5}) == [0])
    with _cluster(state) as c:
        started = c.runtime.txns.get("tx").start_ms
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        txn = c.runtime.txns.get("tx")
        assert (txn.ongoing, txn.producer_id, txn.producer_epoch, txn.start_ms) == (True, p.pid, p.epoch, started)
        assert (txn.partitions, txn.groups, set(txn.offsets["g"])) == ({("t", 0)}, {"g"}, {("t", 0)})
        assert _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12)).last_stable_offset == 0  # still open
        assert _offset(w, "g") == (E.UNSTABLE_OFFSET_COMMIT, -1)
        p.w = w
        assert p.send("t", 0, b"b").error_code == 0  # the sequence continues too
        assert p.end(commit=True) == 0
        assert _committed(w) == [b"a", b"b"] and _offset(w, "g") == (0, 5)
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        assert c.runtime.txns.get("tx").state.value == "CompleteCommit"
        assert _init(w, p.pid, p.epoch) == (0, p.pid, p.epoch + 1)  # the same producer continues (KIP-360)
    with _cluster(state) as c, Wire(c.addresses[0]) as w:  # the answer was lost: the retry gets it again
        assert _init(w, p.pid, p.epoch) == (0, p.pid, p.epoch + 1)
        assert _init(w, p.pid, p.epoch - 1)[0] == E.PRODUCER_FENCED


def test_a_restarted_coordinator_aborts_on_request_and_fences_old_epochs(tmp_path):
    state = tmp_path / "state.json"
    old = _leave_open(state, b"x")
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        old.w = w
        assert old.end(commit=False) == 0
        assert _committed(w) == []
        assert [a.first_offset for a in _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12)).aborted_transactions] \
            == [0]
        new = Producer(w, "tx")
        assert (new.pid, new.epoch) == (old.pid, old.epoch + 1)
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        old.w = new.w = w
        assert old.end(commit=True) == E.PRODUCER_FENCED
        assert old.add_code("t", 0) == E.PRODUCER_FENCED
        assert old.send("t", 0, b"zombie").error_code == E.INVALID_PRODUCER_EPOCH
        assert _init(w, old.pid, old.epoch)[0] == E.PRODUCER_FENCED
        assert new.add_code("t", 0) == 0 and new.send("t", 0, b"y").error_code == 0 and new.end(True) == 0
        assert _committed(w) == [b"y"]


def test_the_timeout_counts_from_the_transactions_start_across_a_restart(tmp_path):
    state = tmp_path / "state.json"
    p = _leave_open(state, b"slow", timeout_ms=300)
    time.sleep(0.4)
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        assert c.runtime.txns.get("tx").ongoing  # resumed: the first request aborts it
        part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
        assert (part.high_watermark, part.last_stable_offset, len(part.aborted_transactions)) == (2, 2, 1)
        p.w = w
        assert p.end(commit=True) == E.PRODUCER_FENCED


def test_a_torn_tail_loses_only_the_last_change(tmp_path):
    state = tmp_path / "state.json"
    p = _leave_open(state, b"a", partitions=2, then=lambda p: p.add_code("t", 1) == 0)  # the last entry
    data = tmp_path / "state.json.data"
    data.write_bytes(data.read_bytes()[:-3])
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        assert c.runtime.txns.get("tx").partitions == {("t", 0)}
        p.w = w
        assert p.end(commit=True) == 0 and _committed(w) == [b"a"]


def _strip_txn_states(data: Path, replace: bytes | None = None) -> None:
    """The journal without its transaction-state entries (as written before they were kept), or with
    each replaced by an undecodable one."""
    kept = [entry(kind, tid, part, body) for kind, tid, part, body in DataFile(data).replay() if kind != TXN_STATE]
    data.write_bytes(b"".join(kept) + (txn_state_entry("tx", replace) if replace is not None else b""))


def test_open_transactions_without_coordinator_state_are_aborted_at_start(tmp_path):
    for case, broken in (("stripped", None), ("undecodable", b"{not json")):
        state = tmp_path / case / "state.json"
        p = _leave_open(state, b"done", then=lambda p: p.end(True) == 0 and p.add_code("t", 0) == 0
                        and p.send("t", 0, b"open").error_code == 0)
        _strip_txn_states(state.with_name("state.json.data"), broken)
        with _cluster(state) as c, Wire(c.addresses[0]) as w:
            assert c.runtime.txns.get("tx") is None
            part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
            assert (part.high_watermark, part.last_stable_offset) == (4, 4)
            assert _committed(w) == [b"done"]
            code, pid, _ = _init(w)
            assert code == 0 and pid != p.pid  # unknown again: a new producer id


def test_the_journal_rewrite_keeps_each_ids_latest_state(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "COMPACT_SLACK", 0)
    state = tmp_path / "state.json"
    with _cluster(state) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            p = Producer(w, "tx")
            for i in range(20):
                assert p.add_code("t", 0) == 0 and p.end(commit=i % 2 == 0) == 0
            assert p.add_code("t", 0) == 0  # open at the restart
    data = tmp_path / "state.json.data"
    assert sum(kind == TXN_STATE for kind, *_ in DataFile(data).replay()) > 40
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        assert [kind for kind, *_ in DataFile(data).replay()].count(TXN_STATE) == 1
        assert c.runtime.txns.get("tx").partitions == {("t", 0)}
        p.w = w
        assert p.end(commit=True) == 0
