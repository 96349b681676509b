"""FindCoordinator and the classic group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

A group's requests are served by its coordinator only (groups/placement.py); elsewhere they get
NOT_COORDINATOR and the client asks FindCoordinator again. JoinGroup and SyncGroup may wait for the
other members: their handlers then return a coroutine the server awaits.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable, Optional, TypeVar, Union

from kcodec.errors import ErrorCode
from kcodec.messages import (FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
                             JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
                             SyncGroupRequest, SyncGroupResponse)

from ..admin_error import KAFKA_MESSAGES
from ..context import Context
from ..groups.coordinator import JoinRequest
from ..groups.group import JoinResult, Membership, SyncResult
from ..groups.placement import GROUP_KEY, INTERNAL_TOPICS, TRANSACTION_KEY, coordinator_for
from . import Later, handles

T = TypeVar("T")
R = TypeVar("R")


def then(value: Union[T, Awaitable[T]], build: Callable[[T], R]) -> Union[R, Later]:
    """``build(value)`` now, or a ``Later`` answer once the awaited value is there."""
    if isinstance(value, Awaitable):
        pending = value

        async def later() -> R:
            return build(await pending)
        return Later(later)
    return build(value)


def not_coordinator(ctx: Context, group_id: str) -> Optional[int]:
    """NOT_COORDINATOR when another broker coordinates ``group_id`` (COORDINATOR_NOT_AVAILABLE when none runs)."""
    node = coordinator_for(ctx.state, group_id)
    if node == ctx.node_id:
        return None
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if node < 0 else ErrorCode.NOT_COORDINATOR


def group_error(ctx: Context, group_id: str, operation: str = "Read") -> Optional[int]:
    """The error for a request about ``group_id`` at this broker by this principal, if any."""
    error = not_coordinator(ctx, group_id)
    if error is None and not ctx.allowed(operation, "group", group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    return error


# -- FindCoordinator -----------------------------------------------------------------------------------
def _find(ctx: Context, key: str, key_type: int) -> tuple[int, Optional[str], int, str, int]:
    """(error, message, node id, host, port) for one key."""
    if key_type not in INTERNAL_TOPICS:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}", -1, "", -1
    if key_type == GROUP_KEY and not ctx.allowed("Describe", "group", key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None, -1, "", -1
    if key_type == TRANSACTION_KEY and not ctx.allowed("Describe", "transactional_id", key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, -1, "", -1
    node = coordinator_for(ctx.state, key, key_type)
    broker = ctx.state.brokers.get(node)
    endpoint = broker.endpoint(ctx.session.listener.name) if broker is not None else None
    if endpoint is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", -1, "", -1
    return ErrorCode.NONE, None, node, endpoint[0], endpoint[1]


@handles(FindCoordinatorRequest, FindCoordinatorResponse)
def find_coordinator(ctx: Context, req: Any) -> FindCoordinatorResponse:
    """v0-3: one key; v4+: a batch of keys (KIP-699). Key types: 0 group, 1 transactional id."""
    key_type = req.key_type if ctx.version >= 1 else GROUP_KEY
    if ctx.version >= 4:  # Kafka leaves a key's message empty unless it has one of its own
        return FindCoordinatorResponse(coordinators=[
            FindCoordinatorResponse.Coordinator(key=k, node_id=n, host=h, port=p, error_code=e, error_message=m or "")
            for k in req.coordinator_keys for e, m, n, h, p in [_find(ctx, k, key_type)]])
    error, message, node, host, port = _find(ctx, req.key, key_type)
    if message is None:  # v0-3: Kafka's message for the code, "NONE" for none
        message = KAFKA_MESSAGES.get(error)
    return FindCoordinatorResponse(error_code=error, error_message=message, node_id=node, host=host, port=port)


# -- JoinGroup -----------------------------------------------------------------------------------------
def _join_response(version: int, r: JoinResult) -> JoinGroupResponse:
    name = r.protocol_name if r.protocol_name is not None or version >= 7 else ""
    return JoinGroupResponse(error_code=r.error, generation_id=r.generation, protocol_type=r.protocol_type,
                             protocol_name=name, leader=r.leader, skip_assignment=r.skip_assignment,
                             member_id=r.member_id, members=[
                                 JoinGroupResponse.Member(member_id=m, group_instance_id=i, metadata=md)
                                 for m, i, md in r.members])


@handles(JoinGroupRequest, JoinGroupResponse)
def join_group(ctx: Context, req: Any) -> Any:
    v = ctx.version
    error = group_error(ctx, req.group_id)
    if error is not None:
        return _join_response(v, JoinResult(error, req.member_id))
    rebalance_ms = req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms  # v0 has none: Kafka's rule
    joined = Membership(req.group_instance_id if v >= 5 else None, ctx.header.client_id or "", ctx.session.host,
                        req.session_timeout_ms, rebalance_ms, req.protocol_type,
                        [(p.name, bytes(p.metadata)) for p in req.protocols])
    join = JoinRequest(req.group_id, req.member_id, joined, require_known_member=v >= 4, skip_assignment=v >= 9)
    return then(ctx.runtime.groups.join(join), lambda r: _join_response(v, r))


# -- SyncGroup -----------------------------------------------------------------------------------------
@handles(SyncGroupRequest, SyncGroupResponse)
def sync_group(ctx: Context, req: Any) -> Any:
    v = ctx.version
    error = group_error(ctx, req.group_id)
    if error is not None:
        return SyncGroupResponse(error_code=error)
    result = ctx.runtime.groups.sync(
        req.group_id, req.generation_id, req.member_id, req.group_instance_id if v >= 3 else None,
        req.protocol_type if v >= 5 else None, req.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in req.assignments})

    def build(r: SyncResult) -> SyncGroupResponse:
        return SyncGroupResponse(error_code=r.error, protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                                 assignment=r.assignment)
    return then(result, build)


# -- Heartbeat, LeaveGroup -------------------------------------------------------------------------------
@handles(HeartbeatRequest, HeartbeatResponse)
def heartbeat(ctx: Context, req: Any) -> HeartbeatResponse:
    error = group_error(ctx, req.group_id)
    if error is None:
        error = ctx.runtime.groups.heartbeat(req.group_id, req.generation_id, req.member_id,
                                             req.group_instance_id if ctx.version >= 3 else None)
    return HeartbeatResponse(error_code=error)


@handles(LeaveGroupRequest, LeaveGroupResponse)
def leave_group(ctx: Context, req: Any) -> LeaveGroupResponse:
    """v0-2: one member; v3+: a batch of members, by member id or group.instance.id (KIP-345)."""
    v = ctx.version
    leaving: list[tuple[str, Optional[str]]] = \
        [(m.member_id, m.group_instance_id) for m in req.members] if v >= 3 else [(req.member_id, None)]
    error = group_error(ctx, req.group_id)
    if error is not None:
        return LeaveGroupResponse(error_code=error)
    errors = ctx.runtime.groups.leave(req.group_id, leaving)
    if v < 3:
        return LeaveGroupResponse(error_code=errors[0])
    return LeaveGroupResponse(members=[
        LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
        for (m, i), e in zip(leaving, errors)])
