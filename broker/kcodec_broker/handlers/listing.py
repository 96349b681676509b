"""ListTopics (KIP-142) and DescribeTopicPartitions with KIP-966's cursor pagination."""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import (DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, ListTopicsRequest,
                             ListTopicsResponse)

from ..context import Context
from ..state import AdminError
from ..topic import validate_topic_name
from . import handles
from .metadata import ZERO_UUID, partitions_of

# The most partitions one DescribeTopicPartitions response carries (Kafka's max.request.partition.size.limit).
MAX_PARTITIONS_PER_RESPONSE = 2000


@handles(ListTopicsRequest, ListTopicsResponse)
def list_topics(ctx: Context, req: Any) -> ListTopicsResponse:
    """Names and the internal flag only; internal topics only when asked; only what the principal may Describe."""
    return ListTopicsResponse(topics=[
        ListTopicsResponse.Topic(name=t.name, internal=t.internal)
        for t in sorted(ctx.state.topics.values(), key=lambda t: t.name)
        if (req.list_internal or not t.internal) and ctx.allowed("Describe", "topic", t.name)])


def _missing(ctx: Context, name: str) -> DescribeTopicPartitionsResponse.Topic:
    """An unknown or invalid name, with what the principal could do to it (as Kafka answers)."""
    try:
        validate_topic_name(name)
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except AdminError:
        code = ErrorCode.INVALID_TOPIC_EXCEPTION
    return DescribeTopicPartitionsResponse.Topic(error_code=code, name=name, topic_id=ZERO_UUID,
                                                 topic_authorized_operations=ctx.operations("topic", name))


@handles(DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse)
def describe_topic_partitions(ctx: Context, req: Any) -> DescribeTopicPartitionsResponse:
    """KIP-966: topics in name order from the cursor on, at most ``response_partition_limit`` partitions;
    ``next_cursor`` names the first partition left out. An empty topic list means every topic."""
    Resp = DescribeTopicPartitionsResponse
    state = ctx.state
    cursor = req.cursor
    start_name = cursor.topic_name if cursor is not None else ""
    every = not req.topics
    names = sorted(state.topics) if every else sorted({t.name for t in req.topics})
    names = [n for n in names if n >= start_name]
    resp = Resp()
    if cursor is not None and (cursor.partition_index < 0 or (not every and cursor.topic_name not in names)):
        resp.topics = [Resp.Topic(error_code=ErrorCode.INVALID_REQUEST, name=t.name) for t in req.topics]
        return resp
    denied = []
    remaining = max(1, min(req.response_partition_limit, MAX_PARTITIONS_PER_RESPONSE))
    for name in names:
        if not ctx.allowed("Describe", "topic", name):
            if not every:  # named topics the principal may not see are reported, never revealed
                denied.append(Resp.Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID))
            continue
        topic = state.topics.get(name)
        if topic is None:
            if not every:
                resp.topics.append(_missing(ctx, name))
            continue
        if remaining == 0:
            resp.next_cursor = Resp.Cursor(topic_name=name, partition_index=0)
            break
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        stop = max(first, min(len(topic.replicas), first + remaining))
        partitions = partitions_of(ctx, topic, Resp.Partition, first, stop)
        for p in partitions:  # no eligible leader replicas (KIP-966's ELR): empty lists, as Kafka 4.4 sends
            p.eligible_leader_replicas, p.last_known_elr = [], []
        resp.topics.append(Resp.Topic(name=name, topic_id=topic.topic_id, is_internal=topic.internal,
                                      partitions=partitions, topic_authorized_operations=ctx.operations("topic", name)))
        remaining -= stop - first
        if stop < len(topic.replicas):
            resp.next_cursor = Resp.Cursor(topic_name=name, partition_index=stop)
            break
    resp.topics.extend(denied)
    return resp
