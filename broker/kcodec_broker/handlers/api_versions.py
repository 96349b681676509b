"""ApiVersions, every version. An unsupported version gets the v0-format answer (server.py)."""

from __future__ import annotations

import re
from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import ApiVersionsRequest, ApiVersionsResponse

from ..context import ClusterRuntime, Context
from ..txn.coordinator import SUPPORTED_VERSIONS
from . import handles, supported_versions

# Kafka's rule for client software names and versions (KIP-511).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
TRANSACTION_VERSION = "transaction.version"
FEATURES_EPOCH = 1  # the finalized features never change while a cluster runs


def api_keys(runtime: ClusterRuntime) -> list[ApiVersionsResponse.ApiVersion]:
    served = {k: runtime.served(k, v) for k, v in supported_versions().items()}
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in served.items()
            if lo <= hi]


def _features(ctx: Context, version: int) -> dict[str, Any]:
    """The transaction.version feature (KIP-584): supported 0-2, finalized at the coordinator's setting
    (clients that know transaction version 2 use it only when it is finalized). Kafka leaves features
    whose minimum is 0 out of the supported list below v4 (KAFKA-17011)."""
    if version < 3:
        return {}
    level = ctx.runtime.transaction_settings.transaction_version
    supported = [] if version < 4 else [ApiVersionsResponse.SupportedFeatureKey(
        name=TRANSACTION_VERSION, min_version=0, max_version=max(SUPPORTED_VERSIONS))]
    return {"supported_features": supported, "finalized_features_epoch": FEATURES_EPOCH, "finalized_features": [
        ApiVersionsResponse.FinalizedFeatureKey(name=TRANSACTION_VERSION, min_version_level=level,
                                                max_version_level=level)]}


def unsupported_version_response() -> ApiVersionsResponse:
    """What Kafka answers, in the v0 layout, to an ApiVersions version it lacks: error 35 and its range."""
    lo, hi = supported_versions()[ApiVersionsRequest.API_KEY]  # type: ignore[attr-defined]
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=ApiVersionsRequest.API_KEY, min_version=lo, max_version=hi)])


@handles(ApiVersionsRequest, ApiVersionsResponse)
def api_versions(ctx: Context, req: Any) -> ApiVersionsResponse:
    if ctx.version >= 3:
        if not (_SOFTWARE.fullmatch(req.client_software_name) and _SOFTWARE.fullmatch(req.client_software_version)):
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
        ctx.session.client = req.client_software_name
        ctx.session.software = (req.client_software_name, req.client_software_version)
    return ApiVersionsResponse(api_keys=api_keys(ctx.runtime), **_features(ctx, ctx.version))
