"""Transactions: the coordinator's state machine and errors, markers, read_committed, fencing, timeouts,
transactional offsets and the admin APIs, over the wire with kcodec's own messages."""

from __future__ import annotations

import time

import pytest
from broker_wire import Wire
from txn_wire import READ_COMMITTED, READ_UNCOMMITTED, Producer, fetch, produce, txn_batch, values

from kcodec_broker import Cluster
from kcodec_broker.groups.placement import TRANSACTION_KEY, coordinator_for
from kcodec_broker.log.producers import MAX_EPOCH
from kcodec_broker.txn import TransactionSettings
from kcodec.errors import ErrorCode as E
from kcodec.messages import (AddPartitionsToTxnRequest, DeleteRecordsRequest, DescribeAclsRequest,
                             DescribeProducersRequest,
                             DescribeTransactionsRequest, EndTxnRequest, FindCoordinatorRequest,
                             InitProducerIdRequest, ListOffsetsRequest, ListTransactionsRequest, OffsetFetchRequest)
from kcodec.records import ControlType, filter_aborted, iter_batches, read_control


@pytest.fixture
def one():
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 2)
        yield c


def _part(resp):
    return resp.responses[0].partitions[0]


def _latest(w: Wire, isolation: int, timestamp: int = -1) -> int:
    r = w.call(ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp,
                                                    current_leader_epoch=-1)])]), 7)
    return r.topics[0].partitions[0].offset


def test_commit_then_abort_markers_and_read_committed(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert (p.add_code("t", 0), p.send("t", 0, b"a", b"b").error_code) == (0, 0)
        part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
        assert (part.high_watermark, part.last_stable_offset, part.records) == (2, 0, b"")
        assert (_latest(w, READ_COMMITTED), _latest(w, READ_UNCOMMITTED)) == (0, 2)
        # by timestamp and max timestamp (-3): only below the last stable offset for read_committed
        for ts in (0, -3):
            assert (_latest(w, READ_COMMITTED, ts), _latest(w, READ_UNCOMMITTED, ts)) == (-1, 0)
        assert values(_part(w.call(fetch("t", 0, 0, READ_UNCOMMITTED), 12)).records) == [b"a", b"b"]
        assert p.end(commit=True) == 0
        part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
        assert (part.high_watermark, part.last_stable_offset, part.aborted_transactions) == (3, 3, [])
        marker = list(iter_batches(part.records))[-1]
        assert (marker.is_control, marker.is_transactional, marker.base_offset) == (True, True, 2)
        assert (marker.producer_id, marker.producer_epoch) == (p.pid, p.epoch)
        control = read_control(list(marker)[0])
        assert (control.type, control.value.coordinator_epoch) == (ControlType.COMMIT, 0)

        assert (p.add_code("t", 0), p.send("t", 0, b"c").error_code, p.end(commit=False)) == (0, 0, 0)
        part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
        assert (part.high_watermark, part.last_stable_offset) == (5, 5)
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(p.pid, 3)]
        kept = [r.value for b in filter_aborted(iter_batches(part.records), part.aborted_transactions) for r in b]
        assert kept == [b"a", b"b"]
        assert read_control(list(list(iter_batches(part.records))[-1])[0]).type == ControlType.ABORT
        # a fetch past the aborted transaction does not list it; one from inside it does
        assert _part(w.call(fetch("t", 0, 5, READ_COMMITTED), 12)).aborted_transactions == []
        assert len(_part(w.call(fetch("t", 0, 4, READ_COMMITTED), 12)).aborted_transactions) == 1
        assert _part(w.call(fetch("t", 0, 0, READ_UNCOMMITTED), 12)).aborted_transactions is None
        assert values(_part(w.call(fetch("t", 0, 0, READ_UNCOMMITTED), 12)).records) == [b"a", b"b", b"c"]


def test_end_txn_state_machine(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert p.end(commit=True) == E.INVALID_TXN_STATE  # Empty
        assert p.add_code("t", 1) == 0
        assert p.end(commit=True) == 0
        assert p.end(commit=True) == 0  # a retried commit succeeds again
        assert p.end(commit=False) == E.INVALID_TXN_STATE
        assert p.add_code("t", 1) == 0 and p.end(commit=False) == 0
        assert p.end(commit=False) == 0 and p.end(commit=True) == E.INVALID_TXN_STATE
        wrong_pid = w.call(EndTxnRequest(transactional_id="tx", producer_id=p.pid + 1, producer_epoch=p.epoch,
                                         committed=True), 3)
        unknown = w.call(EndTxnRequest(transactional_id="nope", producer_id=p.pid, producer_epoch=0, committed=True), 3)
        assert wrong_pid.error_code == unknown.error_code == E.INVALID_PRODUCER_ID_MAPPING
        p.epoch -= 1
        assert p.end(commit=True) == E.PRODUCER_FENCED
        assert p.end(commit=True, version=1) == E.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED is v2+
        assert p.add_code("t", 0) == E.PRODUCER_FENCED
        assert p.add_code("t", 0, version=1) == E.INVALID_PRODUCER_EPOCH


def test_init_producer_id_checks(one):
    with Wire(one.addresses[0]) as w:
        for timeout in (0, -1, 900_001):
            r = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=timeout), 4)
            assert (r.error_code, r.producer_id) == (E.INVALID_TRANSACTION_TIMEOUT, -1)
        assert w.call(InitProducerIdRequest(transactional_id="", transaction_timeout_ms=1000), 4).error_code == \
            E.INVALID_REQUEST
        first = Producer(w, "tx", timeout_ms=900_000)
        again = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000), 4)
        assert (again.producer_id, again.producer_epoch) == (first.pid, first.epoch + 1)
        stale = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000,
                                             producer_id=first.pid, producer_epoch=first.epoch), 4)
        assert stale.error_code == E.PRODUCER_FENCED
        stale = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000,
                                             producer_id=first.pid, producer_epoch=first.epoch), 3)
        assert stale.error_code == E.INVALID_PRODUCER_EPOCH


def test_a_retried_init_producer_id_gets_the_answer_it_lost(one):
    """KIP-360: InitProducerId naming the epoch it replaced (or, after a new producer id, the old id and its
    exhausted epoch) is a retry, answered with the current ones; an older epoch is fenced."""
    def init(pid: int, epoch: int) -> tuple[int, int, int]:
        r = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000, producer_id=pid,
                                         producer_epoch=epoch), 4)
        return r.error_code, r.producer_id, r.producer_epoch

    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert init(p.pid, p.epoch) == (0, p.pid, p.epoch + 1)
        assert init(p.pid, p.epoch) == (0, p.pid, p.epoch + 1)
        assert init(p.pid, p.epoch - 1)[0] == E.PRODUCER_FENCED
        with one.state.lock:
            one.runtime.txns.get("tx").producer_epoch = MAX_EPOCH - 1
        code, new, epoch = init(p.pid, MAX_EPOCH - 1)
        assert (code, epoch) == (0, 0) and new != p.pid
        assert init(p.pid, MAX_EPOCH - 1) == (0, new, 0)
        assert init(p.pid, MAX_EPOCH - 2)[0] == E.PRODUCER_FENCED


def test_add_partitions_refuses_unknown_partitions_and_skips_the_rest(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        r = w.call(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="tx", v3_and_below_producer_id=p.pid, v3_and_below_producer_epoch=p.epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0, 7]),
                                 AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="nope", partitions=[0])]), 3)
        codes = {(t.name, x.partition_index): x.partition_error_code for t in r.results_by_topic_v3_and_below
                 for x in t.results_by_partition}
        assert codes == {("t", 0): E.OPERATION_NOT_ATTEMPTED, ("t", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
                         ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert p.end(commit=True) == E.INVALID_TXN_STATE  # nothing was added


def test_transactional_produce_errors(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        r = w.call(produce("t", 0, txn_batch(b"a", pid=p.pid, epoch=p.epoch, seq=0), None), 9)
        assert r.responses[0].partition_responses[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert p.send("t", 0, b"a").error_code == E.INVALID_TXN_STATE  # not added to the transaction
        assert p.send("t", 1, b"b", version=12).error_code == 0  # KIP-890: v12 adds it
        assert p.add_code("t", 0) == 0 and p.send("t", 0, b"c").error_code == 0
        # an idempotent write from a producer with an open transaction on the partition
        assert p.send("t", 0, b"d", transactional=False).error_code == E.INVALID_TXN_STATE
        assert p.end(commit=True) == 0
        assert values(_part(w.call(fetch("t", 1, 0, READ_COMMITTED), 12)).records) == [b"b"]
        assert values(_part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12)).records) == [b"c"]


def test_a_new_instance_aborts_the_open_transaction_and_fences_the_old(one):
    with Wire(one.addresses[0]) as w:
        old = Producer(w, "tx")
        assert old.add_code("t", 0) == 0 and old.send("t", 0, b"zombie").error_code == 0
        new = Producer(w, "tx")
        assert (new.pid, new.epoch) == (old.pid, old.epoch + 2)  # fenced by one bump, then bumped again
        part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
        marker = list(iter_batches(part.records))[-1]
        assert (marker.is_control, marker.producer_epoch) == (True, old.epoch + 1)
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(old.pid, 0)]
        assert old.send("t", 0, b"late").error_code == E.INVALID_PRODUCER_EPOCH
        assert old.end(commit=True) == E.PRODUCER_FENCED
        assert new.add_code("t", 0) == 0 and new.send("t", 0, b"fresh").error_code == 0 and new.end(True) == 0
        part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))
        kept = [r.value for b in filter_aborted(iter_batches(part.records), part.aborted_transactions) for r in b]
        assert kept == [b"fresh"]


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    with Cluster(brokers=1, system_topic_partitions=1, transactions=TransactionSettings(max_timeout_ms=5000)) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            r = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=5001), 4)
            assert r.error_code == E.INVALID_TRANSACTION_TIMEOUT
            p = Producer(w, "tx", timeout_ms=200)
            assert p.add_code("t", 0) == 0 and p.send("t", 0, b"slow").error_code == 0
            assert _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12)).last_stable_offset == 0
            time.sleep(0.3)
            part = _part(w.call(fetch("t", 0, 0, READ_COMMITTED), 12))  # the next request aborts it first
            assert (part.high_watermark, part.last_stable_offset) == (2, 2)
            assert list(iter_batches(part.records))[-1].producer_epoch == p.epoch + 1
            assert p.end(commit=True) == E.PRODUCER_FENCED
            assert p.send("t", 0, b"late").error_code == E.INVALID_PRODUCER_EPOCH


def test_expiry_follows_each_transactions_own_deadline(one):
    """expire() (before every request) skips its scan until the earliest deadline: a shorter transaction
    begun after a longer one still ends at its own deadline, and the longer one not before its own."""
    txns = one.runtime.txns
    with Wire(one.addresses[0]) as w:
        long, short = Producer(w, "long", timeout_ms=60_000), Producer(w, "short", timeout_ms=1_000)
        assert long.add_code("t", 0) == 0 and short.add_code("t", 1) == 0
    started = {tid: txns.get(tid).start_ms for tid in ("long", "short")}
    with one.state.lock:
        txns.expire(started["short"] + 500)
        assert txns.get("short").ongoing and txns.get("long").ongoing
        txns.expire(started["short"] + 1_001)
        assert not txns.get("short").ongoing and txns.get("long").ongoing
        txns.expire(started["long"] + 59_000)
        assert txns.get("long").ongoing
        txns.expire(started["long"] + 60_001)
        assert not txns.get("long").ongoing


def _offset_fetch(w: Wire, group: str, require_stable: bool) -> tuple[int, int]:
    r = w.call(OffsetFetchRequest(group_id=group, require_stable=require_stable, topics=[
        OffsetFetchRequest.Topic(name="t", partition_indexes=[0])]), 7)
    part = r.topics[0].partitions[0]
    return part.error_code, part.committed_offset


def test_transactional_offsets_wait_for_the_commit(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert p.add_code("t", 0) == 0
        assert p.commit_offsets("g", "t", {0: 5}) == [E.INVALID_TXN_STATE]  # no AddOffsetsToTxn yet
        assert p.add_offsets("g") == 0
        assert p.commit_offsets("g", "t", {0: 5, 9: 1}) == [0, E.UNKNOWN_TOPIC_OR_PARTITION]
        assert _offset_fetch(w, "g", True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
        assert _offset_fetch(w, "g", False) == (0, -1)
        assert p.end(commit=True) == 0
        assert _offset_fetch(w, "g", True) == (0, 5)
        assert p.add_offsets("g") == 0 and p.commit_offsets("g", "t", {0: 9}) == [0]
        assert p.end(commit=False) == 0
        assert _offset_fetch(w, "g", True) == (0, 5)  # the abort dropped 9
        assert p.commit_offsets("g", "t", {0: 11}, version=5) == [0]  # v5 (KIP-890) adds the group itself
        assert p.end(commit=True) == 0 and _offset_fetch(w, "g", False) == (0, 11)
        p.epoch -= 1
        assert p.add_offsets("g") == E.PRODUCER_FENCED
        assert p.commit_offsets("g", "t", {0: 1}) == [E.INVALID_PRODUCER_EPOCH]


def test_transactional_id_acls():
    acls = ["ANONYMOUS:Write:topic:*", "ANONYMOUS:Read:group:*", "ANONYMOUS:Write:transactional_id:ok-*",
            "ANONYMOUS:Describe:transactional_id:seen"]
    with Cluster(brokers=1, system_topic_partitions=1, acls=acls) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            r = w.call(InitProducerIdRequest(transactional_id="other", transaction_timeout_ms=1000), 4)
            assert r.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            found = w.call(FindCoordinatorRequest(key_type=TRANSACTION_KEY,
                                                  coordinator_keys=["other", "ok-1", "seen"]), 4)
            assert [x.error_code for x in found.coordinators] == [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 0, 0]
            p = Producer(w, "ok-1")
            assert p.add_code("t", 0) == 0 and p.send("t", 0, b"a").error_code == 0
            p.tid = "other"
            assert p.end(commit=True) == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert p.send("t", 0, b"b").error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert p.add_offsets("g") == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            # brokers' batched AddPartitionsToTxn needs ClusterAction
            r = w.call(AddPartitionsToTxnRequest(transactions=[]), 4)
            assert r.error_code == E.CLUSTER_AUTHORIZATION_FAILED


def test_describe_acls_lists_transactional_id_acls():
    acls = ["ANONYMOUS:Describe:cluster", "ANONYMOUS:Write:transactional_id:ok-*", "ANONYMOUS:Read:topic:t"]
    with Cluster(brokers=1, system_topic_partitions=1, acls=acls) as c, Wire(c.addresses[0]) as w:
        r = w.call(DescribeAclsRequest(resource_type_filter=5, resource_name_filter=None, pattern_type_filter=1,
                                       principal_filter=None, host_filter=None, operation=1, permission_type=1), 3)
        assert r.error_code == 0
        assert [(x.resource_type, x.resource_name, x.pattern_type, [a.operation for a in x.acls])
                for x in r.resources] == [(5, "ok-", 4, [4])]  # TRANSACTIONAL_ID, PREFIXED, WRITE


def test_requests_go_to_the_transaction_coordinator():
    with Cluster(brokers=3, system_topic_partitions=3) as c:
        node = coordinator_for(c.state, "tx", TRANSACTION_KEY)
        other = next(a for n, a in zip(c.state.broker_ids, c.addresses) if n != node)
        with Wire(other) as w:
            r = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000), 4)
            assert r.error_code == E.NOT_COORDINATOR
            found = w.call(FindCoordinatorRequest(key_type=TRANSACTION_KEY, key="tx"), 3)
            assert (found.error_code, found.node_id) == (0, node)


def test_batched_add_partitions_verifies_and_adds(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert p.add_code("t", 0) == 0
        T = AddPartitionsToTxnRequest

        def call(verify: bool, partitions: list[int], epoch: int = p.epoch) -> list[int]:
            r = w.call(T(transactions=[T.AddPartitionsToTxnTransaction(
                transactional_id="tx", producer_id=p.pid, producer_epoch=epoch, verify_only=verify,
                topics=[T.AddPartitionsToTxnTopic(name="t", partitions=partitions)])]), 5)
            assert r.error_code == 0 and r.results_by_transaction[0].transactional_id == "tx"
            return [x.partition_error_code for x in r.results_by_transaction[0].topic_results[0].results_by_partition]

        assert call(True, [0, 1]) == [0, E.INVALID_TXN_STATE]
        assert call(False, [1]) == [0]
        assert call(True, [0, 1]) == [0, 0]
        assert call(True, [0], epoch=p.epoch - 1) == [E.PRODUCER_FENCED]


def test_describe_and_list_transactions(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx", timeout_ms=30_000)
        Producer(w, "idle")
        assert p.add_code("t", 1) == 0 and p.add_offsets("g") == 0
        r = w.call(DescribeTransactionsRequest(transactional_ids=["tx", "nope"]), 0)
        tx, nope = r.transaction_states
        assert (tx.error_code, tx.transaction_state, tx.transaction_timeout_ms, tx.producer_id) == \
            (0, "Ongoing", 30_000, p.pid)
        assert tx.transaction_start_time_ms > 0
        assert {(t.topic, tuple(t.partitions)) for t in tx.topics} == {("t", (1,)), ("__consumer_offsets", (0,))}
        assert nope.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
        listed = w.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0)
        assert {(x.transactional_id, x.transaction_state) for x in listed.transaction_states} == \
            {("tx", "Ongoing"), ("idle", "Empty")}
        listed = w.call(ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], producer_id_filters=[]), 0)
        assert [x.transactional_id for x in listed.transaction_states] == ["tx"]
        assert list(listed.unknown_state_filters) == ["Bogus"]
        listed = w.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1,
                                                transactional_id_pattern="id.*"), 2)
        assert [x.transactional_id for x in listed.transaction_states] == ["idle"]
        bad = w.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1,
                                             transactional_id_pattern="("), 2)
        assert bad.error_code == E.INVALID_REGULAR_EXPRESSION


def test_list_transactions_pattern_in_linear_time(one):
    # RE2, as for regex subscriptions: Python's re would take ~2**200 steps on (a+)+b against this id,
    # holding the GIL, and the in-process broker would never answer
    tid = "a" * 200
    with Wire(one.addresses[0]) as w:
        Producer(w, tid)
        for pattern, want in (("(a+)+b", []), ("(a+)+(a|aa)*", [tid]), ("(?=a)a*", None)):
            r = w.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1,
                                               transactional_id_pattern=pattern), 2)
            if want is None:  # lookahead: RE2 has none (Java's patterns do)
                assert r.error_code == E.INVALID_REGULAR_EXPRESSION
            else:
                assert r.error_code == 0 and [x.transactional_id for x in r.transaction_states] == want


@pytest.mark.parametrize("version", range(6))
def test_every_version_runs_a_transaction(one, version):
    """InitProducerId v0-5, AddPartitionsToTxn v0-3, AddOffsetsToTxn v0-4, TxnOffsetCommit v0-5, EndTxn v0-4."""
    with Wire(one.addresses[0]) as w:
        p = Producer(w, f"tx{version}", version=version)
        assert p.add_code("t", 0, version=min(version, 3)) == 0
        assert p.send("t", 0, b"v%d" % version).error_code == 0
        assert p.add_offsets("g", version=min(version, 4)) == 0
        assert p.commit_offsets("g", "t", {0: version + 1}, version=version) == [0]
        assert p.end(commit=True, version=min(version, 4)) == 0
        assert _offset_fetch(w, "g", True) == (0, version + 1)


def test_a_waiting_read_committed_fetch_is_answered_by_the_commit(one):
    with Wire(one.addresses[0]) as w, Wire(one.addresses[0]) as reader:
        p = Producer(w, "tx")
        assert p.add_code("t", 0) == 0 and p.send("t", 0, b"held").error_code == 0
        req = fetch("t", 0, 0, READ_COMMITTED)
        req.max_wait_ms, req.min_bytes = 5000, 1
        pending = reader.request(req, 12)
        time.sleep(0.1)
        assert p.end(commit=True) == 0
        part = _part(reader.receive(pending))
        assert values(part.records) == [b"held"]
        assert part.last_stable_offset == 2


def test_cli_transaction_max_timeout(capsys):
    from kcodec.cli import main

    assert main(["broker", "--listen", "127.0.0.1:0", "--transaction-max-timeout-ms", "0"]) == 2
    assert "transaction max timeout 0 ms: it must be at least 1" in capsys.readouterr().err


def test_deleted_records_take_their_aborted_transactions_along(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        for _ in range(2):
            assert p.add_code("t", 0) == 0 and p.send("t", 0, b"x").error_code == 0 and p.end(commit=False) == 0
        with one.state.lock:
            txns = one.state.logs.log(one.topics()["t"].topic_id, 0).txns
            assert [(a.first_offset, a.last_offset) for a in txns.aborted] == [(0, 1), (2, 3)]
        r = w.call(DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=2)])]), 2)
        assert r.topics[0].partitions[0].error_code == 0
        with one.state.lock:
            assert [(a.first_offset, a.last_offset) for a in txns.aborted] == [(2, 3)]
        part = _part(w.call(fetch("t", 0, 2, READ_COMMITTED), 12))
        assert [a.first_offset for a in part.aborted_transactions] == [2]


def test_describe_producers(one):
    with Wire(one.addresses[0]) as w:
        p = Producer(w, "tx")
        assert p.add_code("t", 0) == 0 and p.send("t", 0, b"a", b"b").error_code == 0
        r = w.call(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name="t", partition_indexes=[0, 5])]), 0)
        part, missing = r.topics[0].partitions
        [state] = part.active_producers
        assert (state.producer_id, state.producer_epoch, state.last_sequence) == (p.pid, p.epoch, 1)
        assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, 0) and state.last_timestamp > 0
        assert missing.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert p.end(commit=True) == 0
        r = w.call(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name="t", partition_indexes=[0])]), 0)
        [state] = r.topics[0].partitions[0].active_producers
        assert (state.coordinator_epoch, state.current_txn_start_offset, state.last_sequence) == (0, -1, 1)
