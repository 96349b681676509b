"""GetTelemetrySubscriptions v0 and PushTelemetry v0 (KIP-714): the broker side of client metrics.

No ACL guards them (as in Kafka). The rules live in ``..telemetry``; this module turns a request's header
and connection into the attributes subscriptions match on, and refusals into the response's error code. Each
broker keeps its own client instances; one made on a connection is forgotten when it closes (the server
tells ``Telemetry.disconnected``).
"""

from __future__ import annotations

from typing import Any, Optional

from kcodec.messages import (GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse,
                             PushTelemetryRequest, PushTelemetryResponse)

from ..context import Context
from ..telemetry import ACCEPTED_COMPRESSION, TelemetryError
from . import handles


def _attributes(ctx: Context) -> dict[str, Optional[str]]:
    """The client's values for the ``match`` selectors (those it did not tell: None, matching nothing)."""
    s = ctx.session
    name, version = s.software
    return {"client_id": ctx.header.client_id, "client_software_name": name or None,
            "client_software_version": version or None, "client_source_address": s.address or None,
            "client_source_port": str(s.port) if s.port else None}


@handles(GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse)
def get_telemetry_subscriptions(ctx: Context, req: Any) -> GetTelemetrySubscriptionsResponse:
    try:
        inst = ctx.runtime.telemetry.get_subscriptions(ctx.node_id, req.client_instance_id, _attributes(ctx),
                                                       id(ctx.session))
    except TelemetryError as e:
        return GetTelemetrySubscriptionsResponse(error_code=e.code)
    return GetTelemetrySubscriptionsResponse(
        client_instance_id=inst.instance_id, subscription_id=inst.subscription_id,
        accepted_compression_types=[int(c) for c in ACCEPTED_COMPRESSION], push_interval_ms=inst.interval_ms,
        telemetry_max_bytes=ctx.runtime.telemetry.max_bytes, delta_temporality=True,
        requested_metrics=list(inst.metrics))


@handles(PushTelemetryRequest, PushTelemetryResponse)
def push_telemetry(ctx: Context, req: Any) -> PushTelemetryResponse:
    try:
        ctx.runtime.telemetry.push(req.client_instance_id, _attributes(ctx), req.subscription_id, req.terminating,
                                   req.compression_type, req.metrics or b"", ctx.node_id, id(ctx.session))
    except TelemetryError as e:
        return PushTelemetryResponse(error_code=e.code)
    return PushTelemetryResponse()
