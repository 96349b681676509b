"""CreateTopics (KIP-4, KIP-464, KIP-525), DeleteTopics (by name and id, KIP-619), CreatePartitions."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                             CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse)

from .. import broker_configs as bc
from ..admin_error import KAFKA_MESSAGES
from ..context import Context
from ..state import AdminError
from ..topic import Topic
from . import handles

ZERO_UUID = uuid.UUID(int=0)
DENIED = "Authorization failed."  # CreateTopics' words (ControllerApis)
TOPIC_DENIED = KAFKA_MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED]  # DeleteTopics': the code's own


def _fail(result: Any, code: ErrorCode, message: Optional[str], version: int, message_from: int) -> Any:
    result.error_code = code
    if version >= message_from:
        result.error_message = message
    return result


def _created(ctx: Context, result: Any, topic: Topic) -> None:
    """KIP-525 (v5+): partitions, replication factor and configs, or TopicConfigErrorCode 29 (and no configs)
    when the principal may not DescribeConfigs the topic. Its id (v7+) to whoever created it, as Kafka."""
    v = ctx.version
    if v >= 7:
        result.topic_id = topic.topic_id
    if v < 5:
        return
    if not ctx.allowed("DescribeConfigs", "topic", topic.name):
        result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        result.configs = []
        return
    result.num_partitions = len(topic.replicas)
    result.replication_factor = topic.replication_factor
    result.configs = [CreateTopicsResponse.CreatableTopicConfigs(name=key.name, value=value, read_only=False,
                                                                 config_source=source, is_sensitive=False)
                      for key, value, source, _ in bc.topic_configs(ctx.state.broker_configs, ctx.node_id,
                                                                    topic.configs)]


def _plan(ctx: Context, t: Any) -> Topic:
    names = Counter(c.name for c in t.configs)
    if any(n > 1 for n in names.values()):
        raise AdminError(ErrorCode.INVALID_REQUEST, "A config appears twice for this topic")
    return ctx.state.plan_topic(t.name, t.num_partitions, t.replication_factor,
                                [(a.partition_index, list(a.broker_ids)) for a in t.assignments],
                                {c.name: c.value for c in t.configs})


def _once(names: list[Any]) -> tuple[Counter, set]:
    """How often each name comes in a request, and (empty) the set of duplicates already answered: Kafka
    answers a name given twice once, with INVALID_REQUEST "Duplicate topic name."."""
    return Counter(names), set()


@handles(CreateTopicsRequest, CreateTopicsResponse)
def create_topics(ctx: Context, req: Any) -> CreateTopicsResponse:
    v = ctx.version
    counts, answered = _once([t.name for t in req.topics])
    results = []
    for t in req.topics:
        if t.name in answered:
            continue
        r = CreateTopicsResponse.CreatableTopicResult(name=t.name, error_message=None)
        results.append(r)
        if counts[t.name] > 1:
            answered.add(t.name)
            _fail(r, ErrorCode.INVALID_REQUEST, "Duplicate topic name.", v, 1)
        elif not ctx.may_create(t.name):
            _fail(r, ErrorCode.TOPIC_AUTHORIZATION_FAILED, DENIED, v, 1)
        else:
            try:
                topic = _plan(ctx, t)
                if not req.validate_only:
                    ctx.state.add_topic(topic)
                _created(ctx, r, topic)
            except AdminError as e:
                _fail(r, e.code, e.message, v, 1)
    return CreateTopicsResponse(topics=results)


def _delete_one(ctx: Context, name: Optional[str], topic_id: uuid.UUID) -> tuple[Optional[str], uuid.UUID, ErrorCode, Optional[str]]:
    state = ctx.state
    if name is not None and topic_id != ZERO_UUID:
        return name, topic_id, ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."
    if name is None and topic_id == ZERO_UUID:
        return None, topic_id, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."
    try:
        if name is None:
            topic = state.topic_by_id(topic_id)
            if not ctx.allowed("Describe", "topic", topic.name):  # Kafka: the id is no secret, the name is
                return None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, DENIED
        else:
            if not ctx.allowed("Delete", "topic", name):
                return name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
            topic = state.topic(name)
        if not ctx.allowed("Delete", "topic", topic.name):
            return topic.name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
        state.delete_topic(topic)
        return topic.name, topic.topic_id, ErrorCode.NONE, None
    except AdminError as e:
        return name, topic_id, e.code, e.message


@handles(DeleteTopicsRequest, DeleteTopicsResponse)
def delete_topics(ctx: Context, req: Any) -> DeleteTopicsResponse:
    v = ctx.version
    wanted = [(t.name, t.topic_id) for t in req.topics] if v >= 6 else [(n, ZERO_UUID) for n in req.topic_names]
    counts, answered = _once(wanted)
    results = []
    for name, topic_id in wanted:
        out: tuple[Optional[str], uuid.UUID, ErrorCode, Optional[str]]
        if (name, topic_id) in answered:
            continue
        if counts[(name, topic_id)] > 1:
            answered.add((name, topic_id))
            out = (name, topic_id, ErrorCode.INVALID_REQUEST,
                   "Duplicate topic name." if name is not None else "Duplicate topic id.")
        else:
            out = _delete_one(ctx, name, topic_id)
        r = DeleteTopicsResponse.DeletableTopicResult(name=out[0] if v >= 6 else (out[0] or ""), error_code=out[2])
        if v >= 6:
            r.topic_id = out[1]
        if v >= 5:
            r.error_message = out[3]
        results.append(r)
    return DeleteTopicsResponse(responses=results)


@handles(CreatePartitionsRequest, CreatePartitionsResponse)
def create_partitions(ctx: Context, req: Any) -> CreatePartitionsResponse:
    counts, answered = _once([t.name for t in req.topics])
    results = []
    for t in req.topics:
        if t.name in answered:
            continue
        r = CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name)
        results.append(r)
        if counts[t.name] > 1:
            answered.add(t.name)
            _fail(r, ErrorCode.INVALID_REQUEST, "Duplicate topic name.", 0, 0)
            continue
        if not ctx.allowed("Alter", "topic", t.name):
            _fail(r, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, 0, 0)  # Kafka: the code alone
            continue
        try:
            topic = ctx.state.topic(t.name)
            assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments else None
            added = ctx.state.plan_partitions(topic, t.count, assignments)
            if not req.validate_only:
                ctx.state.add_partitions(topic, added)
        except AdminError as e:  # Kafka names no unknown topic here: its message stays null
            _fail(r, e.code, None if e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else e.message, 0, 0)
    return CreatePartitionsResponse(results=results)
