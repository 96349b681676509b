"""Metadata, every version (by name, by topic id, all topics, auto-creation, authorized operations),
and DescribeCluster."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import DescribeClusterRequest, DescribeClusterResponse, MetadataRequest, MetadataResponse

from ..context import Context
from ..state import AdminError
from ..topic import Topic, validate_topic_name
from . import handles

log = logging.getLogger("kcodec_broker")
ZERO_UUID = uuid.UUID(int=0)
NO_OPERATIONS = -(1 << 31)  # Kafka's "not requested" marker for authorized operations


def partitions_of(ctx: Context, topic: Topic, cls: Any, start: int = 0, stop: Optional[int] = None) -> list[Any]:
    """Partition entries (Metadata or DescribeTopicPartitions) for partitions start..stop."""
    out = []
    for index in range(start, len(topic.replicas) if stop is None else stop):
        leader, isr, offline = ctx.state.partition_leadership(topic, index)
        out.append(cls(error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                       partition_index=index, leader_id=leader, leader_epoch=ctx.state.leader_epoch(topic, index),
                       replica_nodes=list(topic.replicas[index]), isr_nodes=isr, offline_replicas=offline))
    return out


def _topic(ctx: Context, req: Any, topic: Topic) -> MetadataResponse.Topic:
    v = ctx.version
    entry = MetadataResponse.Topic(name=topic.name, is_internal=topic.internal,
                                   partitions=partitions_of(ctx, topic, MetadataResponse.Partition))
    if v < 5:
        for p in entry.partitions:
            p.offline_replicas = []
    if v < 7:
        for p in entry.partitions:
            p.leader_epoch = -1
    if v >= 10:
        entry.topic_id = topic.topic_id
    if v >= 8 and req.include_topic_authorized_operations:
        entry.topic_authorized_operations = ctx.operations("topic", topic.name)
    return entry


def _error(ctx: Context, code: ErrorCode, name: Optional[str], topic_id: uuid.UUID = ZERO_UUID,
           req: Any = None) -> MetadataResponse.Topic:
    entry = MetadataResponse.Topic(error_code=code, name=name if name is not None or ctx.version >= 12 else "")
    if ctx.version >= 10:
        entry.topic_id = topic_id
    if (req is not None and ctx.version >= 8 and req.include_topic_authorized_operations and name
            and code != ErrorCode.TOPIC_AUTHORIZATION_FAILED):  # Kafka: for unknown and invalid names too
        entry.topic_authorized_operations = ctx.operations("topic", name)
    return entry


def _by_name(ctx: Context, req: Any, name: str) -> MetadataResponse.Topic:
    try:
        validate_topic_name(name)
    except AdminError as e:
        return _error(ctx, e.code, name, req=req)
    if not ctx.allowed("Describe", "topic", name):
        return _error(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    topic = ctx.state.topics.get(name)
    if topic is None:
        auto = ctx.version < 4 or req.allow_auto_topic_creation
        if not (auto and ctx.state.auto_create_topics) or name in ctx.runtime.auto_creating:
            return _error(ctx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, req=req)  # the latter: being created
        if not ctx.may_create(name):
            return _error(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
        try:
            topic = ctx.state.plan_topic(name)
        except AdminError as e:
            return _error(ctx, e.code, name)
        _auto_create(ctx, topic)
        # Kafka's AutoTopicCreationManager asks the controller and answers at once, without partitions:
        # a later Metadata finds the topic
        entry = _error(ctx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
        entry.is_internal = topic.internal
        return entry
    return _topic(ctx, req, topic)


def _auto_create(ctx: Context, topic: Topic) -> None:
    """Add the topic now, or after the cluster's auto-creation delay (Kafka's controller round trip)."""
    runtime = ctx.runtime
    if runtime.auto_create_delay_ms <= 0:
        ctx.state.add_topic(topic)
        return

    def create() -> None:
        with runtime.state.lock:
            runtime.auto_creating.discard(topic.name)
            if topic.name not in runtime.state.topics:
                try:
                    runtime.state.add_topic(runtime.state.plan_topic(topic.name))
                except AdminError as e:  # a name taken meanwhile ('.' and '_' collide): Kafka logs it
                    log.info("auto-creation of %s failed: %s", topic.name, e)
    runtime.auto_creating.add(topic.name)
    asyncio.get_running_loop().call_later(runtime.auto_create_delay_ms / 1000, create)


def _by_id(ctx: Context, req: Any, topic_id: uuid.UUID) -> MetadataResponse.Topic:
    try:
        topic = ctx.state.topic_by_id(topic_id)
    except AdminError as e:
        return _error(ctx, e.code, None, topic_id)
    if not ctx.allowed("Describe", "topic", topic.name):  # an id the principal may not see stays unknown
        return _error(ctx, ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id)
    return _topic(ctx, req, topic)


def brokers(ctx: Context, cls: Any, id_field: str = "node_id") -> list[Any]:
    """The running brokers as the client's listener reaches them (Kafka leaves out those without it)."""
    listener = ctx.session.listener.name
    return [cls(**{id_field: b.node_id}, host=e[0], port=e[1], rack=b.rack)
            for b in ctx.state.brokers.values() if (e := b.endpoint(listener)) is not None]


def current_leader(ctx: Context, topic: Topic, index: int, cls: Any, endpoint_cls: Any,
                   endpoints: dict[int, Any]) -> Any:
    """Kafka's getCurrentLeader for a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer (KIP-951):
    the leader and its epoch, and the leader's endpoint on the client's listener, if it runs, put in
    ``endpoints`` (the response's node_endpoints)."""
    leader = ctx.state.leader(topic, index)
    info = ctx.state.brokers.get(leader)
    where = info.endpoint(ctx.session.listener.name) if info is not None else None
    if info is not None and where is not None:
        endpoints[leader] = endpoint_cls(node_id=leader, host=where[0], port=where[1], rack=info.rack)
    return cls(leader_id=leader, leader_epoch=ctx.state.leader_epoch(topic, index))


@handles(MetadataRequest, MetadataResponse)
def metadata(ctx: Context, req: Any) -> MetadataResponse:
    v = ctx.version
    state = ctx.state
    resp = MetadataResponse(brokers=brokers(ctx, MetadataResponse.Broker))
    if v >= 2:
        resp.cluster_id = state.cluster_id
    if v >= 1:
        resp.controller_id = state.controller_id
    if req.topics is None or (v == 0 and not req.topics):
        resp.topics = [_topic(ctx, req, t) for t in sorted(state.topics.values(), key=lambda t: t.name)
                       if ctx.allowed("Describe", "topic", t.name)]
    else:
        # an entry with a topic id asks by id (its name, left null or empty, is not looked at), as Kafka
        resp.topics = [_by_id(ctx, req, t.topic_id) if v >= 10 and t.topic_id != ZERO_UUID
                       else _by_name(ctx, req, t.name or "") for t in req.topics]
    if 8 <= v <= 10 and req.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = ctx.operations("cluster")
    return resp


@handles(DescribeClusterRequest, DescribeClusterResponse)
def describe_cluster(ctx: Context, req: Any) -> DescribeClusterResponse:
    v = ctx.version
    resp = DescribeClusterResponse(cluster_id=ctx.state.cluster_id, controller_id=ctx.state.controller_id)
    if v >= 1 and req.endpoint_type != 1:  # 1: brokers; this cluster has no separate controllers
        resp.error_code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        resp.error_message = "This cluster lists brokers only (endpoint type 1)"
        resp.endpoint_type = req.endpoint_type
        return resp
    resp.brokers = brokers(ctx, DescribeClusterResponse.DescribeClusterBroker, "broker_id")
    if req.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = ctx.operations("cluster")
    return resp
