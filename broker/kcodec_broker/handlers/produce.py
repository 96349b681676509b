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
from typing import Any, NamedTuple, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import ProduceRequest, ProduceResponse

from ..broker_configs import topic_value
from ..context import Context
from ..isr import acks_all_result, refuse_append
from ..log.validator import (NO_LOG_START, Rules, check_request, producer_id_cut_off, scan_request,
                             validate_append)
from ..topic import Topic
from . import CLOSE_CONNECTION, NO_RESPONSE, Later, handles
from .metadata import current_leader
from .transactions import epoch_error

INTERNAL_PRODUCER = "__admin_client"  # Kafka lets only its admin client write system topics
_Partition = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage


class _Settings(NamedTuple):
    """A topic's configs an append needs, read once per request (every partition of the topic shares them)."""
    rules: Rules
    retention_bytes: int
    retention_ms: int
    segment_ms: int


# (id(topic), node) -> (topic, its overrides, the node's dynamic configs, the cluster's, _Settings). Every dict
# of configs is replaced, never changed in place (State.set_configs, DynamicBrokerConfigs.set): the same
# objects mean the same settings, read once rather than nine lookups at every Produce (librdkafka sends a
# request a partition)
_CACHE: dict[tuple[int, int], tuple[Topic, dict[str, str], dict[str, str], dict[str, str], _Settings]] = {}
_CACHE_MAX = 4096


def _settings(ctx: Context, topic: Topic) -> _Settings:
    dynamic, node = ctx.state.broker_configs, ctx.node_id
    key = (id(topic), node)
    hit = _CACHE.get(key)
    own, cluster = dynamic.level(node), dynamic.cluster
    if hit is not None and hit[0] is topic and hit[1] is topic.configs and (hit[2] is own or not hit[2] and not own) \
            and hit[3] is cluster:
        return hit[4]
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    settings = _read_settings(ctx, topic)
    _CACHE[key] = (topic, topic.configs, own, cluster, settings)
    return settings


def _read_settings(ctx: Context, topic: Topic) -> _Settings:
    def config(name: str) -> str:
        return topic_value(ctx.state.broker_configs, ctx.node_id, topic.configs, name)
    rules = Rules(int(config("max.message.bytes")), config("message.timestamp.type") == "LogAppendTime",
                  int(config("message.timestamp.before.max.ms")), int(config("message.timestamp.after.max.ms")),
                  "compact" in config("cleanup.policy").split(","),
                  max_record_body=int(config("max.decompressed.message.bytes")))
    return _Settings(rules, int(config("retention.bytes")), int(config("retention.ms")), int(config("segment.ms")))


def _in_transaction(ctx: Context, transactional_id: str, batch: Any, partition: tuple[str, int]) -> ErrorCode:
    txns = ctx.runtime.txns
    pid, epoch = batch.producer_id, batch.producer_epoch
    if ctx.version >= 12:
        code = txns.add_partitions(transactional_id, pid, epoch, [partition], transaction_version=2)
    else:
        code = txns.in_transaction(transactional_id, pid, epoch, partition)
    return epoch_error(code)


def _produce_partition(ctx: Context, out: _Partition, topic: Topic, records: Any, transactional_id: Optional[str],
                       endpoints: dict[int, Any], acks: int, settings: dict[str, _Settings]) -> None:
    """Append one partition's batch (``records``, which check_request passed, trimmed to it), or set ``out``'s
    error: Kafka's ReplicaManager.appendToLocalLog from the leader check on."""
    state, index = ctx.state, out.index
    if state.leader(topic, index) != ctx.node_id:  # Produce carries no leader epoch to check
        out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if ctx.version >= 10:
            out.current_leader = current_leader(ctx, topic, index, ProduceResponse.LeaderIdAndEpoch,
                                                ProduceResponse.NodeEndpoint, endpoints)
        return
    topic_settings = settings.get(topic.name) or settings.setdefault(topic.name, _settings(ctx, topic))
    rules = topic_settings.rules
    refused, batch = validate_append(memoryview(records), rules, f"{topic.name}-{index}",
                                     int(time.time() * 1000))
    code, message = (refused.code, refused.message) if refused is not None else (ErrorCode.NONE, None)
    if refused is not None and refused.record_errors and ctx.version >= 8:
        out.record_errors = [_RecordError(batch_index=i, batch_index_error_message=m) for i, m in refused.record_errors]
    in_log = code not in NO_LOG_START  # Kafka answers what its log refused with the log's start offset
    if not code and batch.is_transactional:
        code = _in_transaction(ctx, transactional_id or "", batch, (topic.name, index))
        in_log = not code  # Kafka verifies the transaction before the log is reached
    if not code and acks == -1:
        message = refuse_append(state, topic, index)
        code = ErrorCode.NOT_ENOUGH_REPLICAS if message else ErrorCode.NONE
    if code:
        out.error_code = code
        if ctx.version >= 8:
            out.error_message = message
        if in_log:
            out.log_start_offset = state.logs.log(topic.topic_id, index).log_start
        return
    code, base, append_time = state.logs.append(
        topic.topic_id, index, records, rules.log_append_time, topic_settings.retention_bytes,
        topic_settings.retention_ms, topic_settings.segment_ms, state.leader_epoch(topic, index))
    out.error_code, out.base_offset, out.log_append_time_ms = code, base, append_time
    out.log_start_offset = state.logs.log(topic.topic_id, index).log_start


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


def _answer(ctx: Context, req: Any, code: ErrorCode = ErrorCode.NONE, message: Optional[str] = None) -> list[Any]:
    """An answer per topic and partition of the request, each with ``code`` (and ``message``, v8+)."""
    responses = []
    for t in req.topic_data:
        parts = [_Partition(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                            log_start_offset=-1) for p in t.partition_data]
        if ctx.version >= 8:
            for part in parts:
                part.error_message = message
        r = ProduceResponse.TopicProduceResponse(partition_responses=parts)
        if ctx.version >= 13:
            r.topic_id = t.topic_id if t.topic_id is not None else uuid.UUID(int=0)
        else:
            r.name = t.name
        responses.append(r)
    return responses


@handles(ProduceRequest, ProduceResponse, min_version=3)
def produce(ctx: Context, req: Any) -> Any:
    # Kafka's order: the first batches read for the transactional check (a batch no one can read fails the whole
    # request), the acks, each partition as KafkaApis checks it (Write, known, validateRecords), then what
    # ReplicaManager reads of every batch it is given (their producer ids), then each partition's append.
    refused, transactional = scan_request(p.records for t in req.topic_data for p in t.partition_data)
    if refused is not None:
        return CLOSE_CONNECTION if req.acks == 0 else ProduceResponse(
            responses=_answer(ctx, req, refused.code, refused.message))
    if req.acks not in (0, 1, -1):
        code: ErrorCode = ErrorCode.INVALID_REQUIRED_ACKS
    elif transactional and not (req.transactional_id and ctx.allowed("Write", "transactional_id", req.transactional_id)):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code = ErrorCode.NONE
    responses = _answer(ctx, req)
    given: list[tuple[_Partition, Topic, Any]] = []  # (answer, topic, its batch): what ReplicaManager gets
    for t, answer in zip(req.topic_data, responses):
        topic, topic_code = _topic(ctx, t) if not code else (None, code)
        for p, out in zip(t.partition_data, answer.partition_responses):
            if topic is None:
                out.error_code = topic_code
            elif not 0 <= p.index < len(topic.replicas):
                out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                check, size = check_request(p.records, ctx.version)
                if check is not None and check.whole:
                    return CLOSE_CONNECTION if req.acks == 0 else ProduceResponse(
                        responses=_answer(ctx, req, check.code))
                if check is not None:
                    out.error_code = check.code
                elif producer_id_cut_off(size):
                    return CLOSE_CONNECTION if req.acks == 0 else ProduceResponse(
                        responses=_answer(ctx, req, ErrorCode.UNKNOWN_SERVER_ERROR))
                else:  # a cut-off batch after the one whole batch: Kafka trims it
                    given.append((out, topic, p.records if size == len(p.records) else p.records[:size]))
    endpoints: dict[int, Any] = {}  # the leaders named in NOT_LEADER_OR_FOLLOWER answers (v10+)
    waiting: list[tuple[_Partition, Topic, int]] = []  # acks=all: (answer, topic, offset its followers need)
    settings: dict[str, _Settings] = {}  # by topic name
    for out, topic, records in given:
        _produce_partition(ctx, out, topic, records, req.transactional_id, endpoints, req.acks, settings)
        if req.acks == -1 and not out.error_code and ctx.state.copies:  # a follower may lag
            waiting.append((out, topic, ctx.state.logs.log(topic.topic_id, out.index).next_offset))
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
