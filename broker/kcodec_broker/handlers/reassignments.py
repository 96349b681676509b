"""AlterPartitionReassignments v0-1 and ListPartitionReassignments v0 (KIP-455; v1: KIP-860).

Answered as KRaft's controller answers (any broker forwards them there): Alter on the cluster for
Alter, Describe for List, else CLUSTER_AUTHORIZATION_FAILED (Alter: at the top and for every partition;
List: at the top). A timeout of 0 or less has passed before the controller gets to it:
REQUEST_TIMED_OUT in the same places (List has no deadline). Each partition gets its own result, in
request order. With ``forward_admin=False`` a broker other than the controller answers NOT_CONTROLLER at
the top level (after the authorization), as ZooKeeper-era Kafka did. The rules are in ../reassignments.py.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
                             ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse)

from ..context import Context
from ..state import AdminError
from . import handles

log = logging.getLogger("kcodec_broker")

_Alter = AlterPartitionReassignmentsResponse
_List = ListPartitionReassignmentsResponse
CLUSTER_DENIED = "Cluster authorization failed."
NOT_CONTROLLER = "This is not the correct controller for this cluster."


def _not_controller(ctx: Context) -> bool:
    return not ctx.runtime.forward_admin and ctx.node_id != ctx.state.controller_id


def _everywhere(req: Any, code: int, message: Optional[str]) -> list[Any]:
    """Every requested partition with one error (Kafka's AlterPartitionReassignmentsRequest.getErrorResponse)."""
    return [_Alter.ReassignableTopicResponse(name=t.name, partitions=[
        _Alter.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=code, error_message=message)
        for p in t.partitions]) for t in req.topics]


def _reassign(ctx: Context, name: str, index: int, replicas: Optional[list[int]], allow_rf_change: bool) -> Any:
    """One partition's result (ReplicationControlManager.alterPartitionReassignment)."""
    code, message = ErrorCode.NONE, None
    topic = ctx.state.topics.get(name)
    try:
        if topic is None:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}.")
        if not 0 <= index < len(topic.replicas):
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}.")
        ctx.state.reassign(topic, index, None if replicas is None else list(replicas), allow_rf_change)
    except AdminError as e:
        log.info("Unable to alter partition reassignment for %s:%d: %s", name, index, e.message)
        code, message = e.code, e.message
    return _Alter.ReassignablePartitionResponse(partition_index=index, error_code=code, error_message=message)


@handles(AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse)
def alter_partition_reassignments(ctx: Context, req: Any) -> AlterPartitionReassignmentsResponse:
    allow = bool(req.allow_replication_factor_change) if ctx.version >= 1 else True
    resp = _Alter(error_message=None, allow_replication_factor_change=allow)
    failure: Optional[tuple[int, Optional[str]]] = None
    if not ctx.allowed("Alter", "cluster"):
        failure = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    elif _not_controller(ctx):
        resp.error_code, resp.error_message = ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER
        return resp
    elif req.timeout_ms <= 0:  # Kafka's deadline is already past when the controller's queue runs it
        failure = (ErrorCode.REQUEST_TIMED_OUT, None)
    if failure is not None:
        resp.error_code, resp.error_message = failure
        resp.responses = _everywhere(req, *failure)
        return resp
    resp.responses = [_Alter.ReassignableTopicResponse(name=t.name, partitions=[
        _reassign(ctx, t.name, p.partition_index, p.replicas, allow) for p in t.partitions]) for t in req.topics]
    return resp


def _ongoing(ctx: Context, name: str, indexes: list[int]) -> Optional[Any]:
    """A topic's partitions being reassigned among ``indexes`` (None: none, or no such topic)."""
    topic = ctx.state.topics.get(name)
    if topic is None:
        return None
    parts = [_List.OngoingPartitionReassignment(partition_index=i, replicas=list(topic.replicas[i]),
                                                adding_replicas=list(r.adding), removing_replicas=list(r.removing))
             for i in indexes if (r := topic.reassigning.get(i)) is not None]
    return _List.OngoingTopicReassignment(name=name, partitions=parts) if parts else None


@handles(ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse)
def list_partition_reassignments(ctx: Context, req: Any) -> ListPartitionReassignmentsResponse:
    resp = _List(error_message=None)
    if not ctx.allowed("Describe", "cluster"):
        resp.error_code, resp.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
    elif _not_controller(ctx):
        resp.error_code, resp.error_message = ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER
    elif req.topics is None:  # every partition being reassigned
        found = [_ongoing(ctx, name, sorted(t.reassigning)) for name, t in sorted(ctx.state.topics.items())]
        resp.topics = [t for t in found if t is not None]
    else:  # unknown topics and partitions are left out
        found = [_ongoing(ctx, t.name, list(t.partition_indexes)) for t in req.topics]
        resp.topics = [t for t in found if t is not None]
    return resp
