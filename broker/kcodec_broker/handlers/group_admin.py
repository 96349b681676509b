"""DescribeGroups, ListGroups and DeleteGroups: what admin clients see of consumer groups.

Each broker lists and describes the groups it coordinates (admin clients ask every broker for ListGroups
and merge); ACLs as Kafka: Describe on the group (or on the cluster, for listing), Delete to delete.
"""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import (DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
                             ListGroupsRequest, ListGroupsResponse)

from ..context import Context
from ..groups.group import GroupState
from ..groups.placement import coordinator_for
from . import handles
from .groups import group_error

NO_OPERATIONS = -2147483648  # "not asked for" in authorized-operations fields
GROUP_TYPE = "classic"


@handles(DescribeGroupsRequest, DescribeGroupsResponse)
def describe_groups(ctx: Context, req: Any) -> DescribeGroupsResponse:
    """A group this broker does not know is Dead with no members (v6+: GROUP_ID_NOT_FOUND, KIP-1043);
    members' metadata and assignments are shown once the group is Stable, as Kafka does."""
    v, Resp = ctx.version, DescribeGroupsResponse
    out = []
    for gid in req.groups:
        ops = ctx.operations("group", gid) if v >= 3 and req.include_authorized_operations else NO_OPERATIONS
        error = group_error(ctx, gid, "Describe")
        group = ctx.runtime.groups.get(gid) if error is None else None
        if error is not None:
            out.append(Resp.DescribedGroup(error_code=error, group_id=gid, authorized_operations=NO_OPERATIONS))
            continue
        if group is None:
            code = ErrorCode.GROUP_ID_NOT_FOUND if v >= 6 else ErrorCode.NONE
            out.append(Resp.DescribedGroup(error_code=code, error_message=f"Group {gid} not found." if v >= 6 else None,
                                           group_id=gid, group_state=GroupState.DEAD.value,
                                           authorized_operations=ops))
            continue
        stable = group.state == GroupState.STABLE
        members = [Resp.DescribedGroupMember(
            member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name) if stable else b"",
            member_assignment=m.assignment if stable else b"") for m in group.members.values()]
        out.append(Resp.DescribedGroup(group_id=gid, group_state=group.state.value,
                                       protocol_type=group.protocol_type or "",
                                       protocol_data=(group.protocol_name or "") if stable else "",
                                       members=members, authorized_operations=ops))
    return Resp(groups=out)


@handles(ListGroupsRequest, ListGroupsResponse)
def list_groups(ctx: Context, req: Any) -> ListGroupsResponse:
    """v4+ filters by state, v5+ by type (both case-insensitive, empty: all)."""
    v = ctx.version
    states = {s.lower() for s in req.states_filter} if v >= 4 else set()
    types = {t.lower() for t in req.types_filter} if v >= 5 else set()
    every = ctx.allowed("Describe", "cluster")
    coordinator = ctx.runtime.groups
    # (id, protocol type, state, type): the classic groups and the KIP-848 consumer groups
    listed = [(gid, g.protocol_type or "", g.state.value, GROUP_TYPE) for gid, g in coordinator.groups.items()
              if g.state != GroupState.DEAD]
    listed += [(gid, "consumer", g.state, "consumer") for gid, g in coordinator.consumer.groups.items()]
    out = []
    for gid, protocol_type, state, group_type in sorted(listed):
        if coordinator_for(ctx.state, gid) != ctx.node_id or not (every or ctx.allowed("Describe", "group", gid)):
            continue
        if (states and state.lower() not in states) or (types and group_type not in types):
            continue
        out.append(ListGroupsResponse.ListedGroup(group_id=gid, protocol_type=protocol_type, group_state=state,
                                                  group_type=group_type))
    return ListGroupsResponse(groups=out)


@handles(DeleteGroupsRequest, DeleteGroupsResponse)
def delete_groups(ctx: Context, req: Any) -> DeleteGroupsResponse:
    """Only empty groups go (NON_EMPTY_GROUP otherwise), with their committed offsets."""
    out = []
    for gid in req.groups_names:
        error = group_error(ctx, gid, "Delete")
        if error is None:
            error = ctx.runtime.groups.delete(gid)
        out.append(DeleteGroupsResponse.DeletableGroupResult(group_id=gid, error_code=error))
    return DeleteGroupsResponse(results=out)
