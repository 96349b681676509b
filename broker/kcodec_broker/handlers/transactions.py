"""AddPartitionsToTxn (clients' v0-3 and brokers' batched v4+), AddOffsetsToTxn and EndTxn.

A transactional id's requests are served by its coordinator only (the leader of its __transaction_state
partition, groups/placement.py); Write on the transactional id is needed first, as in Kafka. Below v2
PRODUCER_FENCED did not exist: those versions get INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from typing import Any, Optional, TypeVar

from kcodec.errors import ErrorCode
from kcodec.messages import (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
                             AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse)

from ..context import Context
from ..groups.placement import TRANSACTION_KEY, coordinator_for
from . import handles

_Resp = AddPartitionsToTxnResponse
_Code = TypeVar("_Code", int, ErrorCode)


def not_txn_coordinator(ctx: Context, transactional_id: str) -> Optional[int]:
    node = coordinator_for(ctx.state, transactional_id, TRANSACTION_KEY)
    if node == ctx.node_id:
        return None
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if node < 0 else ErrorCode.NOT_COORDINATOR


def txn_error(ctx: Context, transactional_id: str, operation: str = "Write") -> Optional[int]:
    """The error for a request about ``transactional_id`` at this broker by this principal, if any."""
    if not ctx.allowed(operation, "transactional_id", transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return not_txn_coordinator(ctx, transactional_id)


def epoch_error(code: _Code) -> _Code:
    """PRODUCER_FENCED as the APIs that never had it say it (Produce, TxnOffsetCommit): INVALID_PRODUCER_EPOCH."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code


def fenced_as(version: int, first_fenced_version: int, code: int) -> int:
    """PRODUCER_FENCED as the request's version knows it."""
    return code if version >= first_fenced_version else epoch_error(code)


# -- AddPartitionsToTxn --------------------------------------------------------------------------------
def _partition_errors(ctx: Context, topics: list[Any]) -> dict[tuple[str, int], int]:
    """Kafka's checks before the coordinator: Write on each topic, and the partition exists."""
    errors: dict[tuple[str, int], int] = {}
    for t in topics:
        topic = ctx.state.topics.get(t.name)
        for p in t.partitions:
            if not ctx.allowed("Write", "topic", t.name):
                errors[(t.name, p)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p < len(topic.replicas):
                errors[(t.name, p)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return errors


def _add(ctx: Context, transactional_id: str, pid: int, epoch: int, topics: list[Any], verify_only: bool,
         error: Optional[int]) -> list[Any]:
    """One transaction's topic results: every partition gets ``error`` when given; when some partitions
    fail the checks, the rest are OPERATION_NOT_ATTEMPTED."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    codes: dict[tuple[str, int], int] = {}
    if error is not None:
        codes = {tp: error for tp in wanted}
    elif (failed := _partition_errors(ctx, topics)):
        codes = {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    elif verify_only:
        codes = {tp: ctx.runtime.txns.in_transaction(transactional_id, pid, epoch, tp) for tp in wanted}
    else:
        code = fenced_as(ctx.version, 2, ctx.runtime.txns.add_partitions(
            transactional_id, pid, epoch, wanted, transaction_version=2 if ctx.version >= 4 else 1))
        codes = {tp: code for tp in wanted}
    return [_Resp.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
        _Resp.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=codes[(t.name, p)])
        for p in t.partitions]) for t in topics]


@handles(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse)
def add_partitions_to_txn(ctx: Context, req: Any) -> AddPartitionsToTxnResponse:
    if ctx.version < 4:
        tid = req.v3_and_below_transactional_id
        return _Resp(results_by_topic_v3_and_below=_add(
            ctx, tid, req.v3_and_below_producer_id, req.v3_and_below_producer_epoch, req.v3_and_below_topics,
            False, txn_error(ctx, tid)))
    # v4+: brokers verifying (or adding) partitions for many transactions; they need ClusterAction
    if not ctx.allowed("ClusterAction", "cluster"):
        return _Resp(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[])
    return _Resp(error_code=0, results_by_transaction=[
        _Resp.AddPartitionsToTxnResult(transactional_id=t.transactional_id, topic_results=_add(
            ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only,
            not_txn_coordinator(ctx, t.transactional_id)))
        for t in req.transactions])


# -- AddOffsetsToTxn -----------------------------------------------------------------------------------
@handles(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse)
def add_offsets_to_txn(ctx: Context, req: Any) -> AddOffsetsToTxnResponse:
    error = txn_error(ctx, req.transactional_id)
    if error is None and not ctx.allowed("Read", "group", req.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if error is None:
        error = fenced_as(ctx.version, 2, ctx.runtime.txns.add_group(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id))
    return AddOffsetsToTxnResponse(error_code=error)


# -- EndTxn --------------------------------------------------------------------------------------------
@handles(EndTxnRequest, EndTxnResponse)
def end_txn(ctx: Context, req: Any) -> EndTxnResponse:
    """v5 is transaction version 2 (KIP-890 part 2), chosen by the client as in Kafka: the epoch is bumped
    and the answer says the producer id and epoch to continue with."""
    error = txn_error(ctx, req.transactional_id)
    if error is not None:
        return EndTxnResponse(error_code=error)
    if ctx.version >= 5:
        code, pid, epoch = ctx.runtime.txns.end_v2(req.transactional_id, req.producer_id, req.producer_epoch,
                                                   req.committed)
        return EndTxnResponse(error_code=code, producer_id=pid, producer_epoch=epoch)
    return EndTxnResponse(error_code=fenced_as(ctx.version, 2, ctx.runtime.txns.end(
        req.transactional_id, req.producer_id, req.producer_epoch, req.committed)))
