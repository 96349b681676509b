"""DescribeAcls: the ACLs in force, filtered as Kafka filters them (a filter with an UNKNOWN code closes
the connection, as Kafka refuses it while parsing the request)."""

from __future__ import annotations

from typing import Any, Union

from kcodec.errors import ErrorCode
from kcodec.messages import DescribeAclsRequest, DescribeAclsResponse

from ..acl import (LITERAL, OPERATIONS, WIRE_PERMISSIONS, WIRE_RESOURCE_TYPES, acl_filter, unknown_in_filter,
                   wire_pattern)
from ..context import Context
from . import CloseConnection, handles

# Kafka's SecurityDisabledException messages without an authorizer
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"
NO_AUTHORIZER = "No Authorizer is configured."
AUTHORIZATION_FAILED = "Authorization failed."


@handles(DescribeAclsRequest, DescribeAclsResponse)
def describe_acls(ctx: Context, req: Any) -> Union[DescribeAclsResponse, CloseConnection]:
    if unknown_in_filter(req.resource_type_filter, req.pattern_type_filter, req.operation, req.permission_type):
        return CloseConnection("has an UNKNOWN filter element: Kafka fails it while parsing it")
    if not ctx.allowed("Describe", "cluster"):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                    error_message=AUTHORIZATION_FAILED)
    authorizer = ctx.runtime.authorizer
    if not authorizer.enabled:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER_DESCRIBE)
    pattern = req.pattern_type_filter if ctx.version >= 1 else LITERAL
    groups: dict[tuple[int, str, int], list[Any]] = {}
    for acl in authorizer.acls:
        if acl_filter(acl, req.resource_type_filter, req.resource_name_filter, pattern, req.principal_filter,
                      req.host_filter, req.operation, req.permission_type):
            name, acl_pattern = wire_pattern(acl)
            if ctx.version == 0 and acl_pattern != LITERAL:
                continue
            groups.setdefault((WIRE_RESOURCE_TYPES[acl.resource_type], name, acl_pattern), []).append(
                DescribeAclsResponse.AclDescription(principal=acl.principal, host=acl.host,
                                                    operation=OPERATIONS[acl.operation],
                                                    permission_type=WIRE_PERMISSIONS[acl.permission]))
    resources = []
    for (rtype, name, acl_pattern), acls in sorted(groups.items()):
        r = DescribeAclsResponse.DescribeAclsResource(resource_type=rtype, resource_name=name, acls=acls)
        if ctx.version >= 1:
            r.pattern_type = acl_pattern
        resources.append(r)
    return DescribeAclsResponse(error_message=None, resources=resources)
