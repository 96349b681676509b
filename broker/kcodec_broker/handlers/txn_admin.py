"""DescribeTransactions, ListTransactions and DescribeProducers: transactions' state for admin tools.

Each broker answers for the transactional ids it coordinates; the caller sees only ids it may Describe
(and, in DescribeTransactions, only the topics it may Describe). A transaction's consumer-offsets
partition (AddOffsetsToTxn) is listed under __consumer_offsets, as Kafka lists it. DescribeProducers
answers from a partition's leader: the producers it has state for, and where their open transaction began.
"""

from __future__ import annotations

import time
from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import (DescribeProducersRequest, DescribeProducersResponse, DescribeTransactionsRequest,
                             DescribeTransactionsResponse, ListTransactionsRequest, ListTransactionsResponse)

from ..context import Context
from ..groups.placement import GROUP_KEY, INTERNAL_TOPICS, partition_for
from ..regex import InvalidRegex, compile_pattern
from ..txn import Transaction, TxnState
from . import handles
from .transactions import not_txn_coordinator, txn_error

_Described = DescribeTransactionsResponse.TransactionState
_Listed = ListTransactionsResponse.TransactionState


def _partitions(ctx: Context, txn: Transaction) -> dict[str, list[int]]:
    offsets_topic = INTERNAL_TOPICS[GROUP_KEY]
    count = len(ctx.state.topics[offsets_topic].replicas)
    pairs = set(txn.partitions) | {(offsets_topic, partition_for(g, count)) for g in txn.groups}
    out: dict[str, list[int]] = {}
    for name, index in sorted(pairs):
        if ctx.allowed("Describe", "topic", name):
            out.setdefault(name, []).append(index)
    return out


def _describe(ctx: Context, transactional_id: str) -> Any:
    out = _Described(error_code=0, transactional_id=transactional_id, transaction_state="",
                     transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1,
                     topics=[])
    error = txn_error(ctx, transactional_id, "Describe")
    txn = ctx.runtime.txns.get(transactional_id) if error is None else None
    if txn is None:
        out.error_code = error if error is not None else ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return out
    out.transaction_state, out.transaction_timeout_ms = txn.state.value, txn.timeout_ms
    out.transaction_start_time_ms = txn.start_ms
    out.producer_id, out.producer_epoch = txn.producer_id, txn.producer_epoch
    out.topics = [DescribeTransactionsResponse.TopicData(topic=name, partitions=parts)
                  for name, parts in _partitions(ctx, txn).items()]
    return out


@handles(DescribeTransactionsRequest, DescribeTransactionsResponse)
def describe_transactions(ctx: Context, req: Any) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(transaction_states=[_describe(ctx, t) for t in req.transactional_ids])


@handles(ListTransactionsRequest, ListTransactionsResponse)
def list_transactions(ctx: Context, req: Any) -> ListTransactionsResponse:
    known = {s.value for s in TxnState}
    states = set(req.state_filters)
    pids = set(req.producer_id_filters)
    min_age = req.duration_filter if ctx.version >= 1 else -1
    pattern = req.transactional_id_pattern if ctx.version >= 2 else None
    try:
        regex = compile_pattern(pattern) if pattern else None
    except InvalidRegex:  # (RE2, as for regex subscriptions: Kafka's Java patterns can backtrack for ages)
        return ListTransactionsResponse(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION, unknown_state_filters=[],
                                        transaction_states=[])
    now = int(time.time() * 1000)
    listed = []
    for tid, txn in sorted(ctx.runtime.txns.transactions.items()):
        if not_txn_coordinator(ctx, tid) is not None or not ctx.allowed("Describe", "transactional_id", tid):
            continue
        if (states and txn.state.value not in states) or (pids and txn.producer_id not in pids):
            continue
        if min_age >= 0 and not 0 <= txn.start_ms <= now - min_age:
            continue
        if regex is not None and regex.fullmatch(tid) is None:
            continue
        listed.append(_Listed(transactional_id=tid, producer_id=txn.producer_id, transaction_state=txn.state.value))
    return ListTransactionsResponse(error_code=0, unknown_state_filters=sorted(states - known),
                                    transaction_states=listed)


# -- DescribeProducers ---------------------------------------------------------------------------------
def _producers(ctx: Context, name: str, index: int) -> Any:
    Resp = DescribeProducersResponse
    out = Resp.PartitionResponse(partition_index=index, error_code=0, active_producers=[])
    topic = ctx.state.topics.get(name)
    if not ctx.allowed("Read", "topic", name):
        out.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif topic is None or not 0 <= index < len(topic.replicas):
        out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif ctx.state.leader(topic, index) != ctx.node_id:
        out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    else:
        plog = ctx.state.logs.log(topic.topic_id, index)
        out.active_producers = [Resp.ProducerState(
            producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_sequence, last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch, current_txn_start_offset=plog.txns.open.get(pid, -1))
            for pid, e in sorted(plog.producers.items())]
    return out


@handles(DescribeProducersRequest, DescribeProducersResponse)
def describe_producers(ctx: Context, req: Any) -> DescribeProducersResponse:
    return DescribeProducersResponse(topics=[DescribeProducersResponse.TopicResponse(
        name=t.name, partitions=[_producers(ctx, t.name, i) for i in t.partition_indexes]) for t in req.topics])
