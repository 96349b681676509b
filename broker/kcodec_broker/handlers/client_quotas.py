"""AlterClientQuotas and DescribeClientQuotas (KIP-546), on the quotas of ..quotas: AlterConfigs on the
cluster to alter (else every entry is CLUSTER_AUTHORIZATION_FAILED), DescribeConfigs to describe."""

from __future__ import annotations

from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
                             DescribeClientQuotasResponse)

from ..context import Context
from ..quotas import Op, QuotaError
from . import handles

CLUSTER_AUTHORIZATION_FAILED = "Cluster authorization failed."  # Kafka's ClusterAuthorizationException's


@handles(AlterClientQuotasRequest, AlterClientQuotasResponse)
def alter_client_quotas(ctx: Context, req: Any) -> AlterClientQuotasResponse:
    Resp = AlterClientQuotasResponse
    allowed = ctx.allowed("AlterConfigs", "cluster")
    quotas = ctx.state.client_quotas
    out, changed = [], False
    for entry in req.entries:
        entity = list({e.entity_type: e.entity_name for e in entry.entity}.items())  # Kafka: a map, last wins
        code: int = ErrorCode.NONE
        message: Optional[str] = None
        if not allowed:
            code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED
        else:
            try:
                quotas.alter(entity, [Op(o.key, o.value, o.remove) for o in entry.ops], req.validate_only)
                changed = changed or not req.validate_only
            except QuotaError as e:
                code, message = e.code, str(e)
        out.append(Resp.EntryData(error_code=code, error_message=message, entity=[
            Resp.EntityData(entity_type=t, entity_name=n) for t, n in entity]))
    if changed:
        ctx.state.save()
    return Resp(entries=out)


@handles(DescribeClientQuotasRequest, DescribeClientQuotasResponse)
def describe_client_quotas(ctx: Context, req: Any) -> DescribeClientQuotasResponse:
    Resp = DescribeClientQuotasResponse
    if not ctx.allowed("DescribeConfigs", "cluster"):
        return Resp(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=CLUSTER_AUTHORIZATION_FAILED,
                    entries=None)
    try:
        found = ctx.state.client_quotas.describe([(c.entity_type, c.match_type, c.match) for c in req.components],
                                                 req.strict)
    except QuotaError as e:
        return Resp(error_code=e.code, error_message=str(e), entries=None)
    return Resp(error_message=None, entries=[
        Resp.EntryData(entity=[Resp.EntityData(entity_type=t, entity_name=n) for t, n in sorted(entity, key=lambda p: p[0])],
                       values=[Resp.ValueData(key=k, value=v) for k, v in sorted(values.items())])
        for entity, values in found])
