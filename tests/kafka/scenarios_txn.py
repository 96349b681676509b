"""Transactions and ACL denials as conformance diffs: InitProducerId with a transactional id,
AddPartitionsToTxn, transactional Produce, EndTxn (commit and abort; transaction versions 1 and 2), the
markers, read_committed Fetch and ListOffsets; then what a principal without the ACLs is refused."""

from __future__ import annotations

from typing import Any

from conformance import Recorder, scenario
from scenarios_admin import acl, create, delete, grant, metadata, new_topic, revoke
from scenarios_data import batch, consume, fetch, list_offsets, produce

from kcodec.messages import (AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, CreateAclsRequest,
                             CreatePartitionsRequest, DeleteTopicsRequest, DescribeConfigsRequest, EndTxnRequest,
                             FindCoordinatorRequest, InitProducerIdRequest, JoinGroupRequest, ListOffsetsRequest,
                             OffsetCommitRequest, OffsetFetchRequest, TxnOffsetCommitRequest)


def init(r: Recorder, step: str, txn: str, version: int = 5, user: Any = None) -> Any:
    return r.call(step, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000), version, user=user)


def add_partitions(r: Recorder, step: str, txn: str, pid: int, epoch: int, topic: str, partitions: list[int],
                   version: int = 3) -> Any:
    return r.call(step, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=partitions)]),
        version)


def stable(r: Recorder, topic: str, ends: dict[int, int]) -> None:
    """Until the transaction markers are written: the last stable offset of each partition reaches its end."""
    seen: dict[int, object] = {}

    def done() -> bool:
        for p, end in ends.items():
            resp = r.quiet(ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-1)])]), 5)
            seen[p] = resp.topics[0].partitions[0]
            if resp.topics[0].partitions[0].offset < end:
                return False
        return True
    try:
        r.until(f"the markers of {topic}", done)
    except AssertionError as e:
        raise AssertionError(f"{e}; last stable offsets wanted {ends}, last seen {seen}") from None


@scenario()
def scenario_transactions_v1(r: Recorder) -> None:
    """Transaction version 1 (EndTxn v4): AddPartitionsToTxn, transactional Produce, commit; another
    transaction aborted; the markers, read_committed and read_uncommitted Fetch, ListOffsets at the last
    stable offset; the errors of a wrong epoch, an unknown transactional id, EndTxn with nothing to end."""
    t, tx = f"{r.tag}-data", f"{r.tag}-txn"
    create(r, "create", [new_topic(t, 2, 1)])
    r.call("find coordinator", FindCoordinatorRequest(key_type=1, coordinator_keys=[tx]), 4)
    got = init(r, "init", tx, 4)
    pid, epoch = got.producer_id, got.producer_epoch
    add_partitions(r, "add partitions", tx, pid, epoch, t, [0, 1])
    produce(r, "produce in the transaction", t, batch(3, 0, pid=pid, epoch=epoch, seq=0, transactional=True), -1,
            11, transactional_id=tx)
    produce(r, "produce to a partition not added", f"{t}", batch(1, 0, pid=pid, epoch=epoch, seq=0,
                                                                  transactional=True), -1, 11, partition=1,
            transactional_id=tx)
    list_offsets(r, "last stable offset while open", t, [-1], 9, isolation=1)
    r.call("commit", EndTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch, committed=True), 4)
    stable(r, t, {0: 4, 1: 2})
    add_partitions(r, "add again", tx, pid, epoch, t, [0])
    produce(r, "produce to abort", t, batch(2, 3, pid=pid, epoch=epoch, seq=3, transactional=True), -1, 11,
            transactional_id=tx)
    r.call("abort", EndTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch, committed=False), 4)
    stable(r, t, {0: 7})
    r.call("end with nothing open", EndTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch,
                                                   committed=True), 4)
    r.call("old epoch", EndTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch - 1 if epoch else 99,
                                      committed=True), 4)
    r.call("unknown transactional id", EndTxnRequest(transactional_id=f"{tx}-none", producer_id=pid,
                                                      producer_epoch=epoch, committed=True), 4)
    add_partitions(r, "add, unknown producer id", tx, pid + 5000, epoch, t, [0])
    consume(r, "read uncommitted", t, version=11)
    consume(r, "read committed", t, isolation=1, version=11)
    consume(r, "read committed, partition 1", t, partition=1, isolation=1, version=11)
    list_offsets(r, "earliest", t, [-2], 9)
    list_offsets(r, "latest", t, [-1], 9)
    list_offsets(r, "offsets read committed", t, [-1], 9, isolation=1)
    delete(r, "delete", [t])


@scenario()
def scenario_transactions_v2(r: Recorder) -> None:
    """Transaction version 2 (KIP-890, EndTxn v5): partitions join the transaction with the transactional
    Produce itself, offsets go in with AddOffsetsToTxn and TxnOffsetCommit, and each EndTxn bumps the epoch."""
    t, tx, g = f"{r.tag}-data", f"{r.tag}-txn", f"{r.tag}-group"
    create(r, "create", [new_topic(t, 1, 1)])
    got = init(r, "init", tx, 5)
    pid, epoch = got.producer_id, got.producer_epoch
    produce(r, "produce (v12 adds the partition)", t, batch(2, 0, pid=pid, epoch=epoch, seq=0, transactional=True),
            -1, 12, transactional_id=tx)
    r.call("add offsets", AddOffsetsToTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch,
                                                 group_id=g), 4)
    r.call("txn offset commit", TxnOffsetCommitRequest(
        transactional_id=tx, group_id=g, producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
        topics=[TxnOffsetCommitRequest.Topic(name=t, partitions=[TxnOffsetCommitRequest.Partition(
            partition_index=0, committed_offset=2, committed_leader_epoch=-1, committed_metadata="")])]), 4)
    committed = r.call("commit", EndTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch,
                                               committed=True), 5)
    stable(r, t, {0: 3})
    epoch2 = committed.producer_epoch
    produce(r, "produce with the bumped epoch", t, batch(1, 2, pid=pid, epoch=epoch2, seq=0, transactional=True),
            -1, 12, transactional_id=tx)
    r.call("abort", EndTxnRequest(transactional_id=tx, producer_id=pid, producer_epoch=epoch2, committed=False), 5)
    stable(r, t, {0: 5})
    r.call("offsets", OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=g, topics=None)],
                                         require_stable=True), 8)
    consume(r, "read committed", t, isolation=1)
    consume(r, "read uncommitted", t)
    delete(r, "delete", [t])


@scenario()
def scenario_acl_denials(r: Recorder) -> None:
    """What bob (SASL PLAIN, no ACL but Describe on one topic) is refused, API by API, against what the
    super user sees; then with Write and Read granted, the same calls succeed."""
    t, g, tx = f"{r.tag}-data", f"{r.tag}-group", f"{r.tag}-txn"
    create(r, "create", [new_topic(t, 1, 1)])
    describe = acl("bob", 8, t)
    grant(r, "grant describe", [describe])
    metadata(r, "metadata", [t, f"{t}-hidden"], user="bob", authorized_operations=True)
    produce(r, "produce", t, batch(1, 0), -1, 9, user="bob")
    fetch(r, "fetch", t, 12, user="bob")
    list_offsets(r, "list offsets", t, [-1], 9, user="bob")
    r.call("find coordinator", FindCoordinatorRequest(key_type=0, coordinator_keys=[g]), 4, user="bob")
    r.call("join group", JoinGroupRequest(group_id=g, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                          member_id="", protocol_type="consumer",
                                          protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")]),
           9, user="bob")
    r.call("commit offsets", OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.Topic(name=t, partitions=[OffsetCommitRequest.Partition(partition_index=0,
                                                                                     committed_offset=1)])]),
           8, user="bob")
    r.call("fetch offsets", OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=g, topics=None)]), 8,
           user="bob")
    init(r, "transactional init", tx, 5, user="bob")
    r.call("idempotent init", InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 5, user="bob")
    r.call("delete topic", DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=t)],
                                               timeout_ms=5000), 6, user="bob")
    r.call("create partitions", CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name=t, count=2, assignments=None)], timeout_ms=5000, validate_only=True), 3, user="bob")
    r.call("describe configs", DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=t, configuration_keys=["retention.ms"])]), 4, user="bob")
    r.call("create acls", CreateAclsRequest(creations=[acl("bob", 4, t)]), 3, user="bob")
    allowed = [acl("bob", 4, t), acl("bob", 3, t), acl("bob", 3, g, resource_type=3)]
    grant(r, "grant write and read", allowed)
    produce(r, "produce allowed", t, batch(1, 0), -1, 9, user="bob")
    fetch(r, "fetch allowed", t, 12, user="bob")
    r.call("idempotent init allowed", InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 5,
           user="bob")
    r.call("commit offsets allowed", OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=-1, member_id="",
                                                         topics=[OffsetCommitRequest.Topic(name=t, partitions=[
                                                             OffsetCommitRequest.Partition(partition_index=0,
                                                                                           committed_offset=1)])]),
           8, user="bob")
    revoke(r, "revoke", [describe, *allowed])
    delete(r, "delete", [t])
