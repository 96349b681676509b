"""CreateAcls and DeleteAcls (KIP-140, KIP-290 prefixed ACLs), as a KRaft cluster answers them.

Kafka's order: a request with an UNKNOWN (0) code fails while Kafka parses it, and the connection
closes; then Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED for every entry), then no authorizer
(SECURITY_DISABLED). A creation with ANY as its resource type, operation or permission, or ANY / MATCH
as its pattern type, cannot become an ACL binding: Kafka fails the whole request with
UNKNOWN_SERVER_ERROR and no message. The rest is checked per creation (AclApis, then the controller's
AclControlManager), each refusal INVALID_REQUEST with Kafka's message.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from kcodec.errors import ErrorCode
from kcodec.messages import CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse

from ..acl import (ANY, CLUSTER_NAME, LITERAL, MATCH, OPERATIONS, PREFIXED, UNKNOWN, WIRE_PERMISSIONS,
                   WIRE_RESOURCE_TYPES, Acl, acl_filter, unknown_in_filter, wire_pattern)
from ..context import Context
from . import CloseConnection, handles
from .acls import AUTHORIZATION_FAILED, NO_AUTHORIZER

_RESOURCE_TYPES = {code: name for name, code in WIRE_RESOURCE_TYPES.items()}
_OPERATIONS = {code: name for name, code in OPERATIONS.items()}
_PERMISSIONS = {code: name for name, code in WIRE_PERMISSIONS.items()}
_PATTERNS = {LITERAL: "literal", PREFIXED: "prefixed"}


def _refusal(c: Any) -> Optional[str]:
    """Why Kafka refuses one creation (INVALID_REQUEST), or None."""
    if c.resource_type == WIRE_RESOURCE_TYPES["cluster"] and c.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not c.resource_name:
        return "Invalid empty resource name"
    for code, known, what in ((c.resource_type, _RESOURCE_TYPES, "resourceType"),
                              (c.resource_pattern_type, _PATTERNS, "patternType"),
                              (c.operation, _OPERATIONS, "operation"),
                              (c.permission_type, _PERMISSIONS, "permissionType")):
        if code not in known:
            return f"Invalid {what} UNKNOWN"
    if ":" not in c.principal:
        return (f"Could not parse principal from `{c.principal}` (no colon is present separating the principal "
                "type from the principal name)")
    return None


def _acl(c: Any) -> Acl:
    prefixed = c.resource_pattern_type == PREFIXED
    return Acl(c.principal, _OPERATIONS[c.operation], _RESOURCE_TYPES[c.resource_type],
               c.resource_name + ("*" if prefixed else ""), _PERMISSIONS[c.permission_type], c.host,
               _PATTERNS[c.resource_pattern_type])


def _everyone(n: int, code: int, message: Optional[str]) -> CreateAclsResponse:
    return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(error_code=code, error_message=message)
                                       for _ in range(n)])


@handles(CreateAclsRequest, CreateAclsResponse)
def create_acls(ctx: Context, req: Any) -> Union[CreateAclsResponse, CloseConnection]:
    creations = req.creations
    if any(UNKNOWN in (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type) for c in creations):
        return CloseConnection("has an UNKNOWN (0) code: Kafka fails it while parsing it")
    if not ctx.allowed("Alter", "cluster"):
        return _everyone(len(creations), ErrorCode.CLUSTER_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED)
    authorizer = ctx.runtime.authorizer
    if not authorizer.enabled:
        return _everyone(len(creations), ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if any(ANY in (c.resource_type, c.operation, c.permission_type) or c.resource_pattern_type in (ANY, MATCH)
           for c in creations):
        return _everyone(len(creations), ErrorCode.UNKNOWN_SERVER_ERROR, None)
    results: list[Any] = []
    valid: list[Acl] = []
    for c in creations:
        refusal = _refusal(c)
        if refusal is None:
            valid.append(_acl(c))
        results.append(CreateAclsResponse.AclCreationResult(
            error_code=ErrorCode.INVALID_REQUEST if refusal else ErrorCode.NONE, error_message=refusal or ""))
    if authorizer.add(valid):
        ctx.state.save()
    return CreateAclsResponse(results=results)


def _matching(acl: Acl) -> Any:
    name, pattern = wire_pattern(acl)
    return DeleteAclsResponse.DeleteAclsMatchingAcl(
        error_message=None, resource_type=WIRE_RESOURCE_TYPES[acl.resource_type], resource_name=name,
        pattern_type=pattern, principal=acl.principal, host=acl.host, operation=OPERATIONS[acl.operation],
        permission_type=WIRE_PERMISSIONS[acl.permission])


@handles(DeleteAclsRequest, DeleteAclsResponse)
def delete_acls(ctx: Context, req: Any) -> Union[DeleteAclsResponse, CloseConnection]:
    R = DeleteAclsResponse
    filters = req.filters
    if any(unknown_in_filter(f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type)
           for f in filters):
        return CloseConnection("has an UNKNOWN filter element: Kafka fails it while parsing it")
    refused = None
    if not ctx.allowed("Alter", "cluster"):
        refused = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED)
    elif not ctx.runtime.authorizer.enabled:
        refused = (ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if refused is not None:
        return R(filter_results=[R.DeleteAclsFilterResult(error_code=refused[0], error_message=refused[1])
                                 for _ in filters])
    authorizer = ctx.runtime.authorizer
    results: list[Any] = []
    removed: list[Acl] = []
    for f in filters:  # each filter sees every ACL in force before the request (an ACL may answer several)
        matched = [a for a in authorizer.acls if acl_filter(
            a, f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter if ctx.version >= 1 else LITERAL,
            f.principal_filter, f.host_filter, f.operation, f.permission_type)]
        removed.extend(matched)
        results.append(R.DeleteAclsFilterResult(error_message=None, matching_acls=[_matching(a) for a in matched]))
    if authorizer.remove(removed):
        ctx.state.save()
    return R(filter_results=results)
