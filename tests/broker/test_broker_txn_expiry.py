"""Transactional id expiry (Kafka's transactional.id.expiration.ms): an id with no transaction open and no
change for that long is forgotten, in memory and in the journal; time is driven through expire(now)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from broker_wire import Wire
from txn_wire import Producer

from kcodec_broker import Cluster
from kcodec_broker.log import store
from kcodec_broker.log.datafile import TXN_STATE, DataFile, entry, split_txn_state, txn_state_entry
from kcodec_broker.txn import TransactionSettings
from kcodec.errors import ErrorCode as E
from kcodec.messages import DescribeTransactionsRequest, InitProducerIdRequest, ListTransactionsRequest

HOUR = 3600 * 1000


def _cluster(state: Path | None = None, expiration_ms: int = HOUR) -> Cluster:
    return Cluster(brokers=1, system_topic_partitions=1, state_file=state,
                   transactions=TransactionSettings(id_expiration_ms=expiration_ms))


@pytest.fixture
def one():
    with _cluster() as c:
        c.create_topic("t", 1)
        yield c


def _known(w: Wire, tid: str = "tx") -> tuple[int, bool]:
    """DescribeTransactions' error for ``tid`` and whether ListTransactions lists it."""
    described = w.call(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0]
    listed = w.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0).transaction_states
    return described.error_code, tid in [t.transactional_id for t in listed]


def _expire_at(c: Cluster, now: int) -> None:
    with c.state.lock:
        c.runtime.txns.expire(now)


def _updated(c: Cluster, tid: str = "tx") -> int:
    return c.runtime.txns.get(tid).updated_ms


def test_an_idle_id_is_forgotten_after_the_expiration(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert p.add_code("t", 0) == 0 and p.end(commit=True) == 0
        done = _updated(one)
        _expire_at(one, done + HOUR)  # not past it yet
        assert _known(w) == (0, True)
        _expire_at(one, done + HOUR + 1)
        assert _known(w) == (E.TRANSACTIONAL_ID_NOT_FOUND, False)
        assert p.end(commit=True) == E.INVALID_PRODUCER_ID_MAPPING
        again = Producer(w, "tx")  # a new producer id, as for an id never seen
        assert again.pid != p.pid and again.epoch == 0


def test_every_change_is_activity(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        first = _updated(one)
        time.sleep(0.01)
        assert p.add_code("t", 0) == 0 and p.end(commit=False) == 0
        later = _updated(one)
        assert later > first
        _expire_at(one, first + HOUR + 1)  # past the first change's expiry, not the last one's
        assert _known(w) == (0, True)
        _expire_at(one, later + HOUR + 1)
        assert _known(w)[0] == E.TRANSACTIONAL_ID_NOT_FOUND


def test_an_open_transaction_never_expires():
    """Only its timeout ends it; the id expires from that abort on."""
    with _cluster(expiration_ms=1000) as c, Wire(c.addresses[0]) as w:
        c.create_topic("t", 1)
        txns = c.runtime.txns
        p = Producer(w, "tx", timeout_ms=900_000)
        assert p.add_code("t", 0) == 0
        started = txns.get("tx").start_ms
        _expire_at(c, started + 600_000)  # long past its last change's expiry, within its timeout
        assert txns.get("tx").ongoing and _known(w) == (0, True)
        _expire_at(c, started + 900_001)  # the timeout aborts it: a change, the id stays
        assert txns.get("tx").state.value == "CompleteAbort"
        _expire_at(c, _updated(c) + 1001)
        assert _known(w)[0] == E.TRANSACTIONAL_ID_NOT_FOUND


def test_the_check_waits_for_the_earliest_expiry(one):
    """expire() scans only once the earliest due time passed: a later id is not forgotten early, and an
    id created after an older one still expires at its own time."""
    txns = one.runtime.txns
    with Wire(one.addresses[0]) as w:
        Producer(w, "old")
        time.sleep(0.01)
        Producer(w, "new")
    old, new = _updated(one, "old"), _updated(one, "new")
    _expire_at(one, old + HOUR + 1)
    assert txns.get("old") is None and txns.get("new") is not None
    _expire_at(one, new + HOUR + 1)
    assert txns.get("new") is None


def test_expiry_is_journaled_and_the_rewrite_drops_the_id(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "COMPACT_SLACK", 0)
    state = tmp_path / "state.json"
    with _cluster(state) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            gone = Producer(w, "gone")
            assert gone.add_code("t", 0) == 0 and gone.end(commit=True) == 0
            _expire_at(c, _updated(c, "gone") + HOUR + 1)
            assert _known(w, "gone")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
            kept = Producer(w, "kept")
    data = tmp_path / "state.json.data"
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        assert c.runtime.txns.get("gone") is None and c.runtime.txns.get("kept").producer_id == kept.pid
        assert [body[2:6] for kind, *_, body in DataFile(data).replay() if kind == TXN_STATE] == [b"kept"]
        r = w.call(InitProducerIdRequest(transactional_id="gone", transaction_timeout_ms=60_000), 4)
        assert r.error_code == 0 and r.producer_id not in (gone.pid, kept.pid)


def test_an_id_idle_across_a_restart_expires_at_the_first_request(tmp_path):
    state = tmp_path / "state.json"
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        Producer(w, "tx")
    time.sleep(0.01)
    with _cluster(state, expiration_ms=5) as c, Wire(c.addresses[0]) as w:
        assert c.runtime.txns.get("tx") is not None  # its last change's time came back with it
        assert _known(w)[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    with _cluster(state) as c:
        assert c.runtime.txns.get("tx") is None


def test_a_state_journaled_without_its_change_time_counts_from_the_load(tmp_path):
    """An entry written before the last change's time was kept: its expiry counts from the restart."""
    state, data = tmp_path / "state.json", tmp_path / "state.json.data"
    with _cluster(state) as c, Wire(c.addresses[0]) as w:
        Producer(w, "tx")
    kept = []
    for kind, topic, part, body in DataFile(data).replay():
        if kind == TXN_STATE:
            tid, value = split_txn_state(body)
            d = json.loads(value)
            del d["updated_ms"]
            kept.append(txn_state_entry(tid, json.dumps(d).encode()))
        else:
            kept.append(entry(kind, topic, part, body))
    data.write_bytes(b"".join(kept))
    before = int(time.time() * 1000)
    with _cluster(state) as c:
        assert c.runtime.txns.get("tx").updated_ms >= before


def test_cli_transactional_id_expiration(capsys):
    from kcodec.cli import main

    assert main(["broker", "--listen", "127.0.0.1:0", "--transactional-id-expiration-ms", "0"]) == 2
    assert "transactional id expiration 0 ms: it must be at least 1" in capsys.readouterr().err
