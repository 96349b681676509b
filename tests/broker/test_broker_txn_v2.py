"""Transaction version 2 (KIP-890 part 2): EndTxn v5 bumps the epoch at every transaction end, the
finalized transaction.version feature, and TV1 kept available by TransactionSettings."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable

import pytest
from broker_wire import Wire
from txn_wire import READ_COMMITTED, Producer, fetch

from kcodec_broker import Cluster
from kcodec_broker.log.producers import MAX_EPOCH
from kcodec_broker.txn import TransactionSettings
from kcodec.errors import ErrorCode as E
from kcodec.messages import ApiVersionsRequest, EndTxnRequest, InitProducerIdRequest, OffsetFetchRequest
from kcodec.records import filter_aborted, iter_batches


@pytest.fixture
def one():
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 1)
        yield c


def _part(w: Wire):
    return w.call(fetch("t", 0, 0, READ_COMMITTED), 12).responses[0].partitions[0]


def _committed(w: Wire) -> list[bytes]:
    part = _part(w)
    return [r.value for b in filter_aborted(iter_batches(part.records), part.aborted_transactions)
            if not b.is_control for r in b]


def _markers(w: Wire) -> list[tuple[int, int]]:
    return [(b.producer_id, b.producer_epoch) for b in iter_batches(_part(w).records) if b.is_control]


def test_every_end_bumps_the_epoch_and_the_producer_goes_on_with_it(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx", version=5)
        pid, e0 = p.pid, p.epoch
        assert p.send("t", 0, b"a", version=12).error_code == 0  # Produce v12 adds the partition (KIP-890)
        assert p.commit_offsets("g", "t", {0: 1}, version=5) == [0]  # so does TxnOffsetCommit v5
        zombie = copy.copy(p)
        zombie.seqs = {}
        assert p.end_v2(commit=True) == (0, pid, e0 + 1)
        assert _markers(w) == [(pid, e0 + 1)]  # the marker carries the new epoch: e0 is fenced
        assert p.send("t", 0, b"b", version=12).error_code == 0  # sequence 0 again, at the new epoch
        assert p.end_v2(commit=False) == (0, pid, e0 + 2)
        assert _committed(w) == [b"a"]
        r = w.call(OffsetFetchRequest(group_id="g", require_stable=True, topics=[
            OffsetFetchRequest.Topic(name="t", partition_indexes=[0])]), 7)
        assert r.topics[0].partitions[0].committed_offset == 1
        assert zombie.send("t", 0, b"z", version=12).error_code == E.INVALID_PRODUCER_EPOCH
        assert zombie.end(commit=True, version=4) == E.PRODUCER_FENCED


def test_end_txn_v5_retries_empty_aborts_and_errors(one):
    """Kafka's TV2 table: a retry carries the epoch before the bump and gets the same answer again;
    an abort with no transaction bumps the epoch; a commit with none is INVALID_TXN_STATE."""
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx", version=5)
        pid, e = p.pid, p.epoch
        assert p.end_v2(commit=True) == (E.INVALID_TXN_STATE, -1, -1)  # Empty
        assert p.end_v2(commit=False) == (0, pid, e + 1)  # Empty: the abort only bumps the epoch
        assert p.send("t", 0, b"x", version=12).error_code == 0
        assert p.end_v2(commit=True) == (0, pid, e + 2)
        assert p.end_v2(commit=True, epoch=e + 1) == (0, pid, e + 2)  # the retry succeeds again
        assert p.end_v2(commit=False, epoch=e + 1) == (E.INVALID_TXN_STATE, -1, -1)  # not its outcome
        assert p.end_v2(commit=True, epoch=e) == (E.PRODUCER_FENCED, -1, -1)
        assert p.end_v2(commit=True) == (E.INVALID_TXN_STATE, -1, -1)  # no transaction at this epoch
        assert p.end_v2(commit=False) == (0, pid, e + 3)
        assert p.end_v2(commit=False, epoch=e + 2) == (0, pid, e + 3)
        wrong = w.call(EndTxnRequest(transactional_id="tx", producer_id=pid + 1, producer_epoch=e + 3,
                                     committed=True), 5)
        assert (wrong.error_code, wrong.producer_id, wrong.producer_epoch) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)


def test_an_exhausted_epoch_gives_a_new_producer_id(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx", version=5)
        old = p.pid
        with one.state.lock:
            one.runtime.txns.get("tx").producer_epoch = p.epoch = MAX_EPOCH - 1
        assert p.send("t", 0, b"last", version=12).error_code == 0
        code, new, epoch = p.end_v2(commit=True)
        assert (code, epoch) == (0, 0) and new not in (-1, old)
        assert _markers(w) == [(old, MAX_EPOCH)]
        retry = w.call(EndTxnRequest(transactional_id="tx", producer_id=old, producer_epoch=MAX_EPOCH - 1,
                                     committed=True), 5)
        assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, new, 0)
        assert p.send("t", 0, b"first", version=12).error_code == 0 and p.end_v2(commit=True) == (0, new, 1)
        assert _committed(w) == [b"last", b"first"]


def test_a_new_instance_fences_a_tv2_producer_with_one_bump(one):
    """As Kafka 4.1+ (KAFKA-19367): InitProducerId aborts the open transaction with the epoch bumped once,
    which the markers carry (Kafka 4.0 bumped again for them), and the new instance continues from the
    next one: the fenced producer's epoch + 2, as under transaction version 1."""
    with Wire(one.addresses[0]) as w:
        old = Producer(w, "tx", version=5)
        assert old.end_v2(commit=False)[0] == 0  # a TV2 producer: EndTxn v5 bumped its epoch
        assert old.send("t", 0, b"zombie", version=12).error_code == 0
        new = Producer(w, "tx", version=5)
        assert (new.pid, new.epoch) == (old.pid, old.epoch + 2)
        assert _markers(w) == [(old.pid, old.epoch + 1)]
        assert old.end_v2(commit=False) == (E.PRODUCER_FENCED, -1, -1)
        assert old.send("t", 0, b"late", version=12).error_code == E.INVALID_PRODUCER_EPOCH
        assert new.send("t", 0, b"fresh", version=12).error_code == 0 and new.end_v2(commit=True)[0] == 0
        assert _committed(w) == [b"fresh"]


def _exhausted(c: Cluster, p: Producer) -> None:
    """``p`` (the producer of "tx") at epoch 32766, the last one a transaction may begin with."""
    with c.state.lock:
        c.runtime.txns.get("tx").producer_epoch = p.epoch = MAX_EPOCH - 1


def _time_out(c: Cluster) -> None:
    """The coordinator's timeout check, run at 1 ms past the open transaction's timeout."""
    with c.state.lock:
        txn = c.runtime.txns.get("tx")
        c.runtime.txns.expire(txn.start_ms + txn.timeout_ms + 1)


def _init(w: Wire, pid: int = -1, epoch: int = -1) -> tuple[int, int, int]:
    r = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000, producer_id=pid,
                                     producer_epoch=epoch), 5)
    return r.error_code, r.producer_id, r.producer_epoch


def test_fencing_an_exhausted_tv2_epoch_gives_a_new_producer_id(one):
    """The fence takes the epoch to 32767 for the markers, and the abort moves the id to a new producer id
    at 0 (KAFKA-20090), which the new instance bumps: Kafka answers its first InitProducerId with
    CONCURRENT_TRANSACTIONS while it aborts, and the retry bumps the new id to 1."""
    with Wire(one.addresses[0]) as w:
        old = Producer(w, "tx", version=5)
        _exhausted(one, old)
        assert old.send("t", 0, b"zombie", version=12).error_code == 0
        new = Producer(w, "tx", version=5)
        assert new.pid not in (-1, old.pid) and new.epoch == 1
        assert _markers(w) == [(old.pid, MAX_EPOCH)]
        # the new id moved on from 0: not a retry of the abort, and the old id is not the id's any more
        assert old.end_v2(commit=False) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)


def _write(p: Producer) -> bool:
    return p.send("t", 0, b"slow", version=12).error_code == 0  # Produce v12 adds t-0 itself: version 2


def _timed_out(c: Cluster, w: Wire, begin: Callable[[Producer], bool] = _write) -> tuple[Producer, int]:
    """A producer of "tx" at epoch 32766 whose transaction (begun by ``begin``) the coordinator timed out;
    the producer as it was, and the producer id "tx" has now."""
    p = Producer(w, "tx", version=5)
    _exhausted(c, p)
    assert begin(p)
    _time_out(c)
    return p, c.runtime.txns.get("tx").producer_id


def test_a_tv2_timeout_at_an_exhausted_epoch_gives_a_new_producer_id(one):
    """KAFKA-20090: the timeout's fence takes the epoch to 32767 for the ABORT markers (old id), and the
    abort moves the id to a new producer id at 0. The timed-out producer's late EndTxn v5 abort, at 32766,
    is a retry of that abort: NONE with the new id and epoch, which it goes on with."""
    with Wire(one.addresses[0]) as w:
        p, new = _timed_out(one, w)
        zombie = copy.copy(p)
        assert _markers(w) == [(p.pid, MAX_EPOCH)]
        txn = one.runtime.txns.get("tx")
        assert new not in (-1, p.pid) and (txn.producer_epoch, txn.state.value) == (0, "CompleteAbort")
        assert p.end_v2(commit=True) == (E.INVALID_TXN_STATE, -1, -1)  # a retry, of an abort
        assert p.end_v2(commit=False) == (0, new, 0)
        # the old id's late writes are refused: the transactional id has the new one
        assert zombie.send("t", 0, b"late", version=12).error_code == E.INVALID_PRODUCER_ID_MAPPING
        assert zombie.send("t", 0, b"late").error_code == E.INVALID_PRODUCER_ID_MAPPING  # Produce v9
        assert zombie.end_v2(commit=False) == (0, new, 0)  # the same retry, answered again
        assert p.send("t", 0, b"next", version=12).error_code == 0
        assert p.end_v2(commit=True) == (0, new, 1)
        assert _committed(w) == [b"next"]


def test_after_a_tv2_timeout_rotation_the_old_producers_init_producer_id_is_a_retry(one):
    """KAFKA-20090: an InitProducerId naming the old id and 32766 gets the new id at 0 (Kafka's
    lastProducerEpoch retry), as often as it comes; a new instance's bumps the new id to 1."""
    with Wire(one.addresses[0]) as w:
        p, new = _timed_out(one, w)
        assert _init(w, p.pid, MAX_EPOCH - 1) == (0, new, 0)
        assert _init(w, p.pid, MAX_EPOCH - 1) == (0, new, 0)
        assert _init(w) == (0, new, 1)
        assert _init(w, p.pid, MAX_EPOCH - 1)[0] == E.PRODUCER_FENCED
        assert p.end_v2(commit=False) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)


@pytest.mark.parametrize("begin, version", [
    (_write, 2),
    (lambda p: p.commit_offsets("g", "t", {0: 1}, version=5) == [0], 2),  # TxnOffsetCommit v5 adds the group
    (lambda p: p.add_code("t", 0) == 0, 1),  # AddPartitionsToTxn v3
    (lambda p: p.add_offsets("g") == 0, 1),  # AddOffsetsToTxn: version 1 in Kafka, whoever sends it
], ids=["Produce v12", "TxnOffsetCommit v5", "AddPartitionsToTxn v3", "AddOffsetsToTxn"])
def test_the_transaction_version_is_the_adds(one, begin, version):
    """As Kafka's clientTransactionVersion: the request that began the transaction says its version,
    whatever InitProducerId or the cluster's feature level; only version 2 moves to a new producer id."""
    with Wire(one.addresses[0]) as w:
        p, now = _timed_out(one, w, begin)
        assert (now != p.pid) == (version == 2)


def test_a_tv1_timeout_at_an_exhausted_epoch_keeps_the_producer_id(one):
    """Transaction version 1 (AddPartitionsToTxn v3, EndTxn v4) on the same cluster: Kafka's TV1 abort does
    not rotate, the id stays at 32767 and the next InitProducerId gives the new producer id."""
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        _exhausted(one, p)
        assert p.add_code("t", 0) == 0 and p.send("t", 0, b"slow").error_code == 0
        _time_out(one)
        assert _markers(w) == [(p.pid, MAX_EPOCH)]
        txn = one.runtime.txns.get("tx")
        assert (txn.producer_id, txn.producer_epoch) == (p.pid, MAX_EPOCH)
        assert p.end(commit=False, version=4) == E.PRODUCER_FENCED
        code, new, epoch = _init(w)
        assert code == 0 and new not in (-1, p.pid) and epoch == 0


def _exhausted_write(c: Cluster, p: Producer) -> bool:
    """``p`` begins a transaction at epoch 32766 by a write."""
    _exhausted(c, p)
    return _write(p)


def _before_a_restart(state: Path, then: Callable[[Cluster, Producer], bool]) -> Producer:
    """Run a cluster on ``state`` where a TV2 producer of "tx" does ``then``; the producer as it was."""
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            p = Producer(w, "tx", version=5)
            assert then(c, p)
    return p


def test_the_transaction_version_survives_a_restart(tmp_path):
    """A TV2 transaction left open at 32766 and timed out after a restart still moves to a new id."""
    state = tmp_path / "state.json"
    p = _before_a_restart(state, _exhausted_write)
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c, Wire(c.addresses[0]) as w:
        _time_out(c)
        new = c.runtime.txns.get("tx").producer_id
        assert new not in (-1, p.pid) and _markers(w) == [(p.pid, MAX_EPOCH)]
        p.w = w
        assert p.end_v2(commit=False) == (0, new, 0)


def test_a_tv2_retry_survives_a_restart(tmp_path):
    state = tmp_path / "state.json"
    p = _before_a_restart(state, lambda c, p: p.send("t", 0, b"a", version=12).error_code == 0
                          and p.end_v2(commit=True)[0] == 0)
    e = p.epoch - 1  # the epoch the EndTxn carried
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c, Wire(c.addresses[0]) as w:
        p.w = w
        assert p.end_v2(commit=True, epoch=e) == (0, p.pid, e + 1)
        assert p.send("t", 0, b"b", version=12).error_code == 0 and p.end_v2(commit=True) == (0, p.pid, e + 2)
        assert _committed(w) == [b"a", b"b"]


def _features(c: Cluster, version: int):
    with Wire(c.addresses[0]) as w:
        r = w.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)
    end_txn = next(a for a in r.api_keys if a.api_key == EndTxnRequest.API_KEY)
    return (end_txn.max_version, [(f.name, f.min_version, f.max_version) for f in r.supported_features],
            r.finalized_features_epoch >= 0,
            [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features])


def test_api_versions_finalizes_the_transaction_version(one):
    tv = "transaction.version"
    assert _features(one, 4) == (5, [(tv, 0, 2)], True, [(tv, 2, 2)])
    assert _features(one, 3) == (5, [], True, [(tv, 2, 2)])  # a minimum of 0 is left out below v4 (KAFKA-17011)
    with Cluster(brokers=1, system_topic_partitions=1,
                 transactions=TransactionSettings(transaction_version=1)) as c:
        assert _features(c, 4) == (5, [(tv, 0, 2)], True, [(tv, 1, 1)])
    with pytest.raises(ValueError, match="transaction version 3"):
        TransactionSettings(transaction_version=3)


def test_cli_transaction_version(capsys):
    from kcodec.cli import main
    with pytest.raises(SystemExit):
        main(["broker", "--listen", "127.0.0.1:0", "--transaction-version", "3"])
    assert "--transaction-version" in capsys.readouterr().err
