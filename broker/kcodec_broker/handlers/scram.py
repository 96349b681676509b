"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), with Kafka's errors."""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
                             DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse)

from ..context import Context
from ..credentials import Refusal
from . import handles

AUTHORIZATION_FAILED = "Authorization failed."


@handles(DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse)
def describe_user_scram_credentials(ctx: Context, req: Any) -> DescribeUserScramCredentialsResponse:
    R = DescribeUserScramCredentialsResponse
    if not ctx.allowed("Describe", "cluster"):
        return R(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=AUTHORIZATION_FAILED)
    names = None if req.users is None else [u.name for u in req.users]
    results = []
    for user, found in ctx.state.credentials.describe(names):
        if isinstance(found, Refusal):
            results.append(R.DescribeUserScramCredentialsResult(user=user, error_code=found.code,
                                                                error_message=found.message))
        else:
            infos = [R.CredentialInfo(mechanism=m, iterations=i) for m, i in found]
            results.append(R.DescribeUserScramCredentialsResult(user=user, error_message=None,
                                                                credential_infos=infos))
    return R(error_message=None, results=results)


@handles(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse)
def alter_user_scram_credentials(ctx: Context, req: Any) -> AlterUserScramCredentialsResponse:
    R = AlterUserScramCredentialsResponse
    users = list(dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions]))
    if not ctx.allowed("Alter", "cluster"):
        return R(results=[R.AlterUserScramCredentialsResult(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                            error_message=AUTHORIZATION_FAILED) for u in users])
    outcome = ctx.state.credentials.alter(
        [(d.name, d.mechanism) for d in req.deletions],
        [(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password)) for u in req.upsertions])
    if any(r is None for r in outcome.values()):
        ctx.state.save()
    return R(results=[R.AlterUserScramCredentialsResult(
        user=u, error_code=r.code if r else ErrorCode.NONE, error_message=r.message if r else None)
        for u, r in outcome.items()])
