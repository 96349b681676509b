"""Produce v3 and later: one validated v2 batch per partition, appended as received.

acks=0 gets no response at all (``NO_RESPONSE``), or, when a partition failed, a closed connection as in
Kafka (``CLOSE_CONNECTION``): the client's only way to learn of it. A refused batch leaves the log
untouched; the checks and their codes are Kafka's (log/validator.py).

Transactional batches need the request's transactional id, Write on it, and the partition in that
id's ongoing transaction (INVALID_TXN_STATE otherwise, as Kafka's partition verification says); from v12
(KIP-890 part 2) the Produce itself adds the partition, as Kafka's brokers do.

acks=all (-1) is refused with NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas, and its
answer waits while a follower in the ISR lags behind the records (isr.py).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import ProduceRequest, ProduceResponse

from .. import configs as cfg
from ..context import Context
from ..isr import acks_all_result, refuse_append
from ..log.validator import Rules, validate
from ..log.transactions import TRANSACTIONAL_BIT
from ..state import Topic
from . import CLOSE_CONNECTION, NO_RESPONSE, Later, handles
from .metadata import current_leader
from .transactions import epoch_error

INTERNAL_PRODUCER = "__admin_client"  # Kafka lets only its admin client write system topics
_Partition = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage


def _config(topic: Topic, name: str) -> str:
    value = topic.configs.get(name)
    return value if value is not None else (cfg.TOPIC_CONFIGS[name].default or "")


def _rules(topic: Topic) -> Rules:
    return Rules(int(_config(topic, "max.message.bytes")), _config(topic, "message.timestamp.type") == "LogAppendTime",
                 int(_config(topic, "message.timestamp.before.max.ms")),
                 int(_config(topic, "message.timestamp.after.max.ms")),
                 "compact" in _config(topic, "cleanup.policy").split(","))


def _in_transaction(ctx: Context, transactional_id: str, batch: Any, partition: tuple[str, int]) -> ErrorCode:
    txns = ctx.runtime.txns
    pid, epoch = batch.producer_id, batch.producer_epoch
    if ctx.version >= 12:
        code = txns.add_partitions(transactional_id, pid, epoch, [partition], transaction_version=2)
    else:
        code = txns.in_transaction(transactional_id, pid, epoch, partition)
    return epoch_error(code)


def _transactional(records: Any) -> bool:
    """Whether a v2 batch's attributes say transactional (bytes 21..23; magic at byte 16)."""
    return records is not None and len(records) > 22 and records[16] == 2 and bool(records[22] & TRANSACTIONAL_BIT)


def _produce_partition(ctx: Context, topic: Topic, index: int, records: Optional[bytes],
                       transactional_id: Optional[str], endpoints: dict[int, Any], acks: int) -> _Partition:
    out = _Partition(index=index, error_code=0, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
    state = ctx.state
    if not 0 <= index < len(topic.replicas):
        out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return out
    if state.leader(topic, index) != ctx.node_id:  # Produce carries no leader epoch to check
        out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if ctx.version >= 10:
            out.current_leader = current_leader(ctx, topic, index, ProduceResponse.LeaderIdAndEpoch,
                                                ProduceResponse.NodeEndpoint, endpoints)
        return out
    refused, batch = validate(records, ctx.version, _rules(topic), f"{topic.name}-{index}", int(time.time() * 1000))
    code, message = (refused.code, refused.message) if refused is not None else (ErrorCode.NONE, None)
    if refused is not None and refused.record_errors and ctx.version >= 8:
        out.record_errors = [_RecordError(batch_index=i, batch_index_error_message=m) for i, m in refused.record_errors]
    if not code and records is not None and batch.size != len(records):
        records = records[:batch.size]  # a cut-off batch after the one whole batch: Kafka trims it
    if not code and batch.is_transactional:
        code = _in_transaction(ctx, transactional_id or "", batch, (topic.name, index))
    if not code and acks == -1:
        message = refuse_append(state, topic, index)
        code = ErrorCode.NOT_ENOUGH_REPLICAS if message else ErrorCode.NONE
    if code:
        out.error_code = code
        if ctx.version >= 8:
            out.error_message = message
        return out
    code, base, append_time = state.logs.append(
        topic.topic_id, index, records, _config(topic, "message.timestamp.type") == "LogAppendTime",
        int(_config(topic, "retention.bytes")), int(_config(topic, "retention.ms")), int(_config(topic, "segment.ms")),
        state.leader_epoch(topic, index))
    out.error_code, out.base_offset, out.log_append_time_ms = code, base, append_time
    out.log_start_offset = state.logs.log(topic.topic_id, index).log_start
    return out


def _topic(ctx: Context, t: Any) -> tuple[Optional[Topic], ErrorCode]:
    state = ctx.state
    if ctx.version >= 13:
        topic = next((x for x in state.topics.values() if x.topic_id == t.topic_id), None)
        if topic is None:  # Kafka: an unknown id first, then Write on the topic it names
            return None, ErrorCode.UNKNOWN_TOPIC_ID
    else:
        topic = state.topics.get(t.name)
        if not ctx.allowed("Write", "topic", t.name):
            return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if topic is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not ctx.allowed("Write", "topic", topic.name):
        return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if topic.system and ctx.header.client_id != INTERNAL_PRODUCER:
        return None, ErrorCode.INVALID_TOPIC_EXCEPTION  # KIP-619: clients cannot write system topics
    return topic, ErrorCode.NONE


@handles(ProduceRequest, ProduceResponse, min_version=3)
def produce(ctx: Context, req: Any) -> Any:
    if req.acks not in (0, 1, -1):
        code: ErrorCode = ErrorCode.INVALID_REQUIRED_ACKS
    elif any(_transactional(p.records) for t in req.topic_data for p in t.partition_data) and not (
            req.transactional_id and ctx.allowed("Write", "transactional_id", req.transactional_id)):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code = ErrorCode.NONE
    responses = []
    endpoints: dict[int, Any] = {}  # the leaders named in NOT_LEADER_OR_FOLLOWER answers (v10+)
    waiting: list[tuple[_Partition, Topic, int]] = []  # acks=all: (answer, topic, offset its followers need)
    for t in req.topic_data:
        topic, topic_code = _topic(ctx, t) if not code else (None, code)
        parts = []
        for p in t.partition_data:
            if topic is None:
                parts.append(_Partition(index=p.index, error_code=topic_code, base_offset=-1, log_append_time_ms=-1,
                                        log_start_offset=-1))
            else:
                parts.append(_produce_partition(ctx, topic, p.index, p.records, req.transactional_id, endpoints,
                                                req.acks))
                if req.acks == -1 and not parts[-1].error_code and ctx.state.copies:  # a follower may lag
                    waiting.append((parts[-1], topic, ctx.state.logs.log(topic.topic_id, p.index).next_offset))
        r = ProduceResponse.TopicProduceResponse(partition_responses=parts)
        if ctx.version >= 13:
            r.topic_id = t.topic_id if t.topic_id is not None else uuid.UUID(int=0)
        else:
            r.name = t.name
        responses.append(r)
    ctx.state.logs.flush(sync=req.acks == -1)
    if req.acks == 0:
        failed = any(p.error_code for r in responses for p in r.partition_responses)
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    resp = ProduceResponse(responses=responses)
    if endpoints:
        resp.node_endpoints = [endpoints[n] for n in sorted(endpoints)]
    if not _acks_all_done(ctx, waiting):
        return _acks_all_later(ctx, resp, waiting, req.timeout_ms)
    return resp


def _acks_all_done(ctx: Context, waiting: list[tuple[_Partition, Topic, int]]) -> bool:
    """Answer each partition whose in-sync followers hold its records (or that no longer waits: isr.py);
    True when none waits any more. ``waiting`` keeps the others."""
    still = []
    for part, topic, required in waiting:
        code = acks_all_result(ctx.state, topic, part.index, ctx.node_id, required)
        if code is None:
            still.append((part, topic, required))
        elif code:
            part.error_code = code
    waiting[:] = still
    return not still


def _acks_all_later(ctx: Context, resp: Any, waiting: list[tuple[_Partition, Topic, int]], timeout_ms: int) -> Later:
    """Kafka's DelayedProduce: the answer once every waiting partition is done, or at ``timeout_ms`` with
    REQUEST_TIMED_OUT for those still waiting."""
    deadline = time.monotonic() + max(timeout_ms, 0) / 1000.0
    lock = ctx.state.lock

    async def wait() -> Any:
        while True:
            with lock:
                if _acks_all_done(ctx, waiting):
                    return resp
                changed = ctx.state.logs.changed()
            left = deadline - time.monotonic()
            if left <= 0:
                changed.cancel()
                for part, _, _ in waiting:
                    part.error_code = ErrorCode.REQUEST_TIMED_OUT
                return resp
            try:
                await asyncio.wait_for(changed, left)
            except asyncio.TimeoutError:
                pass
    return Later(wait)
