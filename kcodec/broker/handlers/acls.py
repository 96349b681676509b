"""DescribeAcls: the broker's allow-ACLs, filtered as Kafka filters them."""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import DescribeAclsRequest, DescribeAclsResponse

from ..acl import ALLOW, LITERAL, OPERATIONS, WIRE_RESOURCE_TYPES, acl_filter, wire_pattern
from ..context import Context
from . import handles


@handles(DescribeAclsRequest, DescribeAclsResponse)
def describe_acls(ctx: Context, req: Any) -> DescribeAclsResponse:
    if not ctx.allowed("Describe", "cluster"):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                    error_message="Authorization failed.")
    authorizer = ctx.runtime.authorizer
    if not authorizer.enabled:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message="No ACLs are configured")
    pattern = req.pattern_type_filter if ctx.version >= 1 else LITERAL
    groups: dict[tuple[int, str, int], list[Any]] = {}
    for acl in authorizer.acls:
        if acl_filter(acl, req.resource_type_filter, req.resource_name_filter, pattern, req.principal_filter,
                      req.host_filter, req.operation, req.permission_type):
            name, acl_pattern = wire_pattern(acl)
            if ctx.version == 0 and acl_pattern != LITERAL:
                continue
            groups.setdefault((WIRE_RESOURCE_TYPES[acl.resource_type], name, acl_pattern), []).append(
                DescribeAclsResponse.AclDescription(principal=acl.principal, host="*",
                                                    operation=OPERATIONS[acl.operation], permission_type=ALLOW))
    resources = []
    for (rtype, name, acl_pattern), acls in sorted(groups.items()):
        r = DescribeAclsResponse.DescribeAclsResource(resource_type=rtype, resource_name=name, acls=acls)
        if ctx.version >= 1:
            r.pattern_type = acl_pattern
        resources.append(r)
    return DescribeAclsResponse(error_message=None, resources=resources)
