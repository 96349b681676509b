"""KIP-848's ConsumerGroupHeartbeat (v0-1) and ConsumerGroupDescribe: groups whose assignment the broker
computes (groups/consumer.py). confluent-kafka speaks it with ``group.protocol=consumer``."""

from __future__ import annotations

from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                             ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)

from ..context import Context
from ..groups.consumer import Assignment, Heartbeat
from . import handles
from .groups import group_error

NO_OPERATIONS = -2147483648


def _wire(assignment: Assignment, cls: Any) -> list[Any]:
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(assignment.items(), key=lambda i: str(i[0]))]


@handles(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)
def consumer_group_heartbeat(ctx: Context, req: Any) -> ConsumerGroupHeartbeatResponse:
    Resp = ConsumerGroupHeartbeatResponse
    error = group_error(ctx, req.group_id)
    if error is not None:  # an error answer carries nothing else (member id null, epoch 0), as Kafka's
        return Resp(error_code=error)
    owned: Optional[Assignment] = None
    if req.topic_partitions is not None:
        owned = {tp.topic_id: set(tp.partitions) for tp in req.topic_partitions}
    topics = req.subscribed_topic_names
    if topics is not None and any(not ctx.allowed("Describe", "topic", t) for t in topics):
        return Resp(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    authorizer, principal, address = ctx.runtime.authorizer, ctx.session.principal, ctx.session.address

    def may_describe(topic: str) -> bool:  # kept by the member: its regex is resolved again as topics change
        return authorizer.allowed(principal, "Describe", "topic", topic, address)
    r = ctx.runtime.groups.consumer.heartbeat(Heartbeat(
        req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id, req.rebalance_timeout_ms,
        None if topics is None else list(topics), req.subscribed_topic_regex if ctx.version >= 1 else None,
        req.server_assignor, owned, ctx.header.client_id or "", ctx.session.host, server_generates_id=ctx.version == 0,
        may_describe=may_describe))
    if r.error:
        return Resp(error_code=r.error, error_message=r.message)
    assignment = None if r.assignment is None else Resp.Assignment(topic_partitions=_wire(r.assignment,
                                                                                        Resp.TopicPartitions))
    leaving = req.member_epoch < 0  # Kafka tells a member that leaves no interval
    return Resp(error_code=r.error, error_message=r.message, member_id=r.member_id, member_epoch=r.epoch,
                heartbeat_interval_ms=0 if leaving else ctx.runtime.groups.settings.consumer_heartbeat_interval_ms,
                assignment=assignment)


@handles(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)
def consumer_group_describe(ctx: Context, req: Any) -> ConsumerGroupDescribeResponse:
    Resp = ConsumerGroupDescribeResponse
    names = {t.topic_id: t.name for t in ctx.state.topics.values()}

    def assignment(a: Assignment) -> Any:
        return Resp.Assignment(topic_partitions=[Resp.TopicPartitions(topic_id=t, topic_name=names.get(t, ""),
                                                                      partitions=sorted(ps))
                                                 for t, ps in sorted(a.items(), key=lambda i: str(i[0]))])
    out = []
    for gid in req.group_ids:
        error = group_error(ctx, gid, "Describe")
        group = ctx.runtime.groups.consumer.groups.get(gid) if error is None else None
        if group is None:
            code = error if error is not None else ErrorCode.GROUP_ID_NOT_FOUND
            out.append(Resp.DescribedGroup(error_code=code, group_id=gid,
                                           error_message=None if error is not None else f"Group {gid} not found."))
            continue
        members = [Resp.Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                               member_epoch=m.epoch, client_id=m.client_id, client_host=m.client_host,
                               subscribed_topic_names=list(m.subscribed), subscribed_topic_regex=m.regex,
                               assignment=assignment(m.assigned),
                               target_assignment=assignment(group.target.get(m.member_id, {})))
                   for m in group.members.values()]
        out.append(Resp.DescribedGroup(group_id=gid, group_state=group.state, group_epoch=group.epoch,
                                       assignment_epoch=group.target_epoch, assignor_name="uniform", members=members,
                                       authorized_operations=ctx.operations("group", gid)
                                       if req.include_authorized_operations else NO_OPERATIONS))
    return Resp(groups=out)
