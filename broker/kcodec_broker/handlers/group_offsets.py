"""OffsetCommit, OffsetFetch (single group and KIP-709's batch of groups) and OffsetDelete.

Committed offsets live in ``ClusterState.offsets`` and are saved with the state file. ACLs as Kafka:
Read on the group and the topic to commit, Describe on both to fetch, Delete on the group and Read on
the topic to delete. From v10 (KIP-848) topics travel by id.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
                             OffsetFetchRequest, OffsetFetchResponse)

from ..context import Context
from ..groups.offsets import Committed
from ..state import AdminError
from ..topic import Topic
from . import handles
from .groups import group_error
from .metadata import ZERO_UUID

MAX_METADATA = 4096  # offset.metadata.max.bytes


def _topic(ctx: Context, name: Optional[str], topic_id: Optional[uuid.UUID]) -> tuple[Optional[Topic], int]:
    """The topic a request names (by id from v10), or the error for it."""
    try:
        if topic_id is not None:
            return ctx.state.topic_by_id(topic_id), ErrorCode.NONE
        return ctx.state.topic(name or ""), ErrorCode.NONE
    except AdminError as e:
        return None, e.code


# -- OffsetCommit ----------------------------------------------------------------------------------------
@handles(OffsetCommitRequest, OffsetCommitResponse)
def offset_commit(ctx: Context, req: Any) -> OffsetCommitResponse:
    v, Resp = ctx.version, OffsetCommitResponse
    by_id = v >= 10
    error = group_error(ctx, req.group_id, "Read")
    if error is None:
        error = ctx.runtime.groups.validate_commit(req.group_id, req.generation_id_or_member_epoch if v >= 1 else -1,
                                                   req.member_id if v >= 1 else "",
                                                   req.group_instance_id if v >= 7 else None)
        error = error or None
    now = int(time.time() * 1000)
    committed = False
    out = []
    for t in req.topics:
        topic, topic_error = _topic(ctx, None if by_id else t.name, t.topic_id if by_id else None)
        name = topic.name if topic is not None else t.name if not by_id else ""
        parts = []
        for p in t.partitions:
            if error is not None:
                code = error
            elif not ctx.allowed("Read", "topic", name):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.replicas):
                code = topic_error or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > MAX_METADATA:
                code = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                ctx.state.offsets.commit(req.group_id, topic.name, p.partition_index, Committed(
                    p.committed_offset, p.committed_leader_epoch if v >= 6 else -1, p.committed_metadata or "",
                    now))
                committed, code = True, ErrorCode.NONE
            parts.append(Resp.Partition(partition_index=p.partition_index, error_code=code))
        out.append(Resp.Topic(topic_id=t.topic_id, partitions=parts) if by_id else
                   Resp.Topic(name=name, partitions=parts))
    if committed:
        ctx.state.save()
    return Resp(topics=out)


# -- OffsetFetch -----------------------------------------------------------------------------------------
def _fetch_group(ctx: Context, group_id: str, topics: Optional[list[Any]], by_id: bool,
                 Topic_: Any, Partition: Any, require_stable: bool = False) -> tuple[int, list[Any]]:
    """(group error, topics) of one group; ``topics`` None asks for every committed partition.
    ``require_stable`` (v7+, KIP-447): a partition whose offset waits in an open transaction is
    UNSTABLE_OFFSET_COMMIT, so the consumer retries until the transaction ends."""
    error = group_error(ctx, group_id, "Describe")
    if error is not None:  # old versions say it per partition too
        return error, [Topic_(name=t.name, partitions=[Partition(partition_index=i, committed_offset=-1,
                                                                 error_code=error) for i in t.partition_indexes])
                       for t in topics or []] if not by_id else []
    committed = ctx.state.offsets.of(group_id)
    if topics is None:
        wanted: dict[str, list[int]] = {}
        for name, partition in sorted(committed):
            if ctx.allowed("Describe", "topic", name):
                wanted.setdefault(name, []).append(partition)
        requests: list[tuple[str, Optional[uuid.UUID], list[int], int]] = [
            (name, ctx.state.topics[name].topic_id if name in ctx.state.topics else None, parts, ErrorCode.NONE)
            for name, parts in wanted.items()]
    else:
        requests = []
        for t in topics:
            topic, topic_error = _topic(ctx, None if by_id else t.name, t.topic_id if by_id else None)
            name = topic.name if topic is not None else ("" if by_id else t.name)
            if topic_error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                topic_error = ErrorCode.NONE  # Kafka answers -1 for a topic it lacks
            if topic is not None and not ctx.allowed("Describe", "topic", name):
                topic_error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            requests.append((name, t.topic_id if by_id else None, list(t.partition_indexes), topic_error))
    pending = ctx.runtime.txns.pending_offsets(group_id) if require_stable else set()
    out = []
    for name, topic_id, partitions, topic_error in requests:
        parts = []
        for i in partitions:
            error = topic_error or (ErrorCode.UNSTABLE_OFFSET_COMMIT if (name, i) in pending else ErrorCode.NONE)
            c = committed.get((name, i)) if not error else None
            parts.append(Partition(partition_index=i, committed_offset=c.offset if c else -1,
                                   committed_leader_epoch=c.leader_epoch if c else -1,
                                   metadata=c.metadata if c else "", error_code=error))
        out.append(Topic_(topic_id=topic_id or ZERO_UUID, partitions=parts) if by_id else
                   Topic_(name=name, partitions=parts))
    return ErrorCode.NONE, out


def _member_error(ctx: Context, group_id: str, member_id: Optional[str], epoch: int) -> Optional[int]:
    """OffsetFetch v9+ from a KIP-848 member: UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH when it is not current."""
    group = ctx.runtime.groups.consumer.groups.get(group_id)
    if not member_id or group is None or group_error(ctx, group_id, "Describe") is not None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return None if epoch in (member.epoch, member.previous_epoch) else ErrorCode.STALE_MEMBER_EPOCH


@handles(OffsetFetchRequest, OffsetFetchResponse)
def offset_fetch(ctx: Context, req: Any) -> OffsetFetchResponse:
    v, Resp = ctx.version, OffsetFetchResponse
    if v >= 8:
        groups = []
        for g in req.groups:
            stale = _member_error(ctx, g.group_id, g.member_id, g.member_epoch) if v >= 9 else None
            if stale is not None:
                groups.append(Resp.Group(group_id=g.group_id, error_code=stale))
                continue
            error, topics = _fetch_group(ctx, g.group_id, g.topics, v >= 10, Resp.Topics, Resp.Partitions,
                                         req.require_stable)
            groups.append(Resp.Group(group_id=g.group_id, error_code=error, topics=topics))
        return Resp(groups=groups)
    error, topics = _fetch_group(ctx, req.group_id, req.topics, False, Resp.Topic, Resp.Partition,
                                 v >= 7 and req.require_stable)
    return Resp(error_code=error, topics=topics)


# -- OffsetDelete ----------------------------------------------------------------------------------------
@handles(OffsetDeleteRequest, OffsetDeleteResponse)
def offset_delete(ctx: Context, req: Any) -> OffsetDeleteResponse:
    """Offsets of topics the group's members subscribe to stay (GROUP_SUBSCRIBED_TO_TOPIC); classic
    groups and KIP-848 consumer groups alike."""
    Resp = OffsetDeleteResponse
    error = group_error(ctx, req.group_id, "Delete")
    if error is not None:
        return Resp(error_code=error)
    group = ctx.runtime.groups.get(req.group_id)
    if group is not None:
        subscribed = group.subscribed_topics()
        if subscribed is None:  # members of another protocol type, or unreadable subscriptions
            return Resp(error_code=ErrorCode.NON_EMPTY_GROUP)
    else:
        subscribed = ctx.runtime.groups.consumer.subscribed_topics(req.group_id)
        if subscribed is None:
            return Resp(error_code=ErrorCode.GROUP_ID_NOT_FOUND)
    out, deleted = [], False
    for t in req.topics:
        topic = ctx.state.topics.get(t.name)
        parts = []
        for p in t.partitions:
            if not ctx.allowed("Read", "topic", t.name):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.replicas):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif t.name in subscribed:
                code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                ctx.state.offsets.delete(req.group_id, t.name, p.partition_index)
                code, deleted = ErrorCode.NONE, True
            parts.append(Resp.Partition(partition_index=p.partition_index, error_code=code))
        out.append(Resp.Topic(name=t.name, partitions=parts))
    if deleted:
        ctx.state.save()
    return Resp(topics=out)
