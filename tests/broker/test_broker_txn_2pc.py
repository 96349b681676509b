"""InitProducerId v6 (KIP-939, two-phase commit): served only with TransactionSettings.two_phase_commit;
a participant's transactions never time out, keep_prepared_txn keeps an open transaction for the
new instance to commit or abort, and a participant needs the TwoPhaseCommit ACL."""

from __future__ import annotations

import os

import pytest
from broker_wire import Wire, start_cli
from txn_wire import READ_COMMITTED, Producer, fetch, values

from kcodec_broker import Acl, Cluster
from kcodec_broker.acl import Authorizer
from kcodec_broker.txn import TransactionSettings
from kcodec.errors import ErrorCode as E
from kcodec.messages import ApiVersionsRequest, DescribeAclsRequest, InitProducerIdRequest


@pytest.fixture
def two_phase():
    with Cluster(brokers=1, system_topic_partitions=1, transactions=TransactionSettings(two_phase_commit=True)) as c:
        c.create_topic("t", 1)
        yield c


def _init_v6(w: Wire, enable_2pc: bool, keep: bool = False, timeout_ms: int = 60_000) -> tuple[int, ...]:
    r = w.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=timeout_ms, enable2_pc=enable_2pc,
                                     keep_prepared_txn=keep), 6)
    return r.error_code, r.producer_id, r.producer_epoch, r.ongoing_txn_producer_id, r.ongoing_txn_producer_epoch


def _init_max(address: tuple[str, int]) -> tuple[int, list[tuple[str, int]]]:
    """InitProducerId's newest version and the finalized features, as ApiVersions v3 says them."""
    with Wire(address) as w:
        r = w.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    return (next(a.max_version for a in r.api_keys if a.api_key == InitProducerIdRequest.API_KEY),
            [(f.name, f.max_version_level) for f in r.finalized_features])


def test_v6_only_with_two_phase_commit(two_phase):
    assert _init_max(two_phase.addresses[0])[0] == 6
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert _init_max(c.addresses[0])[0] == 5  # as Kafka 4.3, where v6 is unstable
        assert _init_v6(w, True)[0] == E.UNSUPPORTED_VERSION


def test_a_participants_transaction_never_times_out(two_phase):
    txns = two_phase.runtime.txns
    with Wire(two_phase.addresses[0]) as w:
        assert _init_v6(w, False, timeout_ms=0)[0] == E.INVALID_TRANSACTION_TIMEOUT  # not a participant
        code, pid, epoch, *ongoing = _init_v6(w, True, timeout_ms=0)  # any timeout: it is not applied
        assert (code, ongoing) == (0, [-1, -1]) and txns.get("tx").timeout_ms == 2 ** 31 - 1
        p = Producer.given(w, "tx", pid, epoch)
        assert p.add_code("t", 0) == 0
    with two_phase.state.lock:
        txns.expire(txns.get("tx").start_ms + 30 * 24 * 3600 * 1000)
        assert txns.get("tx").ongoing


def test_keep_prepared_txn_hands_the_open_transaction_over(two_phase):
    with Wire(two_phase.addresses[0]) as w:
        old = Producer(w, "tx", timeout_ms=60_000, version=6)
        assert old.add_code("t", 0) == 0 and old.send("t", 0, b"prepared").error_code == 0
        code, pid, epoch, ongoing_pid, ongoing_epoch = _init_v6(w, True, keep=True)
        assert (code, pid, epoch, ongoing_pid, ongoing_epoch) == (0, old.pid, old.epoch + 1, old.pid, old.epoch)
        part = w.call(fetch("t", 0, 0, READ_COMMITTED), 12).responses[0].partitions[0]
        assert part.last_stable_offset == 0  # still open
        assert old.end(commit=True) == E.PRODUCER_FENCED  # the old instance is fenced
        new = Producer.given(w, "tx", pid, epoch)
        assert new.end(commit=True) == 0
        part = w.call(fetch("t", 0, 0, READ_COMMITTED), 12).responses[0].partitions[0]
        assert values(part.records) == [b"prepared"]
        # without keep_prepared_txn the open transaction is aborted, as before
        assert new.add_code("t", 0) == 0
        assert _init_v6(w, True)[3:] == (-1, -1) and not two_phase.runtime.txns.get("tx").ongoing


def test_a_participant_needs_two_phase_commit_on_the_id():
    """KIP-939: InitProducerId with enable2_pc needs TwoPhaseCommit (AclOperation 15) on the transactional
    id besides Write; Write alone still serves it without enable2_pc. DescribeAcls lists the grant."""
    acls = ["ANONYMOUS:Write:transactional_id:*", "ANONYMOUS:TwoPhaseCommit:transactional_id:2pc-*",
            "ANONYMOUS:Describe:cluster"]
    with Cluster(brokers=1, system_topic_partitions=1, acls=acls,
                 transactions=TransactionSettings(two_phase_commit=True)) as c, Wire(c.addresses[0]) as w:
        def init(tid: str, enable_2pc: bool) -> int:
            return w.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000,
                                                enable2_pc=enable_2pc), 6).error_code

        assert init("tx", True) == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert init("tx", False) == 0
        assert init("2pc-1", True) == 0
        r = w.call(DescribeAclsRequest(resource_type_filter=5, resource_name_filter="2pc-", pattern_type_filter=4,
                                       principal_filter=None, host_filter=None, operation=15, permission_type=1), 3)
        assert [(x.resource_name, [a.operation for a in x.acls]) for x in r.resources] == [("2pc-", [15])]
    with pytest.raises(ValueError, match="TwoPhaseCommit"):  # the operation's name, as kafka-acls.sh spells it
        Acl.parse("alice:TwoPhase:transactional_id:x")
    assert Acl.parse("alice:TwoPhaseCommit:transactional_id:x").operation == "TwoPhaseCommit"
    only_write = Authorizer(["alice:Write:transactional_id:*", "bob:All:transactional_id:*"])
    assert not only_write.allowed("User:alice", "TwoPhaseCommit", "transactional_id", "x")
    assert only_write.allowed("User:bob", "TwoPhaseCommit", "transactional_id", "x")


def test_cli_transaction_flags():
    proc, line = start_cli("--transaction-version", "1", "--transaction-two-phase-commit", env=dict(os.environ))
    try:
        host, port = line.split("bootstrap ")[1].split(",")[0].split(":")
        assert _init_max((host, int(port))) == (6, [("transaction.version", 1)])
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
