"""ListConfigResources v0-1 (KIP-1000 as ListClientMetricsResources; v1: KIP-1142, any resource type).

As Kafka's broker answers: DescribeConfigs on the cluster, else CLUSTER_AUTHORIZATION_FAILED. v0 lists
client-metrics resources only; v1 the types it asks for (none: every type v1 knows), and a type outside
TOPIC (2), BROKER (4), BROKER_LOGGER (8), CLIENT_METRICS (16) and GROUP (32) makes the whole answer
UNSUPPORTED_VERSION. This broker keeps configs for topics (every topic, internal ones too) and brokers
(the running ones reachable on the client's listener, also listed as broker loggers) and client-metrics
subscriptions (KIP-714, ``..client_metrics``); it keeps no group configs, so that type lists nothing.
"""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import ListConfigResourcesRequest, ListConfigResourcesResponse

from ..context import Context
from . import handles

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SUPPORTED = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}
_Resource = ListConfigResourcesResponse.ConfigResource


def _names(ctx: Context, resource_type: int) -> list[str]:
    if resource_type == TOPIC:
        return sorted(ctx.state.topics)
    if resource_type in (BROKER, BROKER_LOGGER):
        listener = ctx.session.listener.name
        return [str(b.node_id) for b in sorted(ctx.state.brokers.values(), key=lambda b: b.node_id)
                if b.endpoint(listener) is not None]
    if resource_type == CLIENT_METRICS:
        return ctx.state.client_metrics.names()
    return []  # GROUP: none kept


@handles(ListConfigResourcesRequest, ListConfigResourcesResponse)
def list_config_resources(ctx: Context, req: Any) -> ListConfigResourcesResponse:
    if not ctx.allowed("DescribeConfigs", "cluster"):
        return ListConfigResourcesResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    supported = SUPPORTED[min(ctx.version, 1)]
    asked = list(dict.fromkeys(req.resource_types)) if ctx.version >= 1 and req.resource_types else list(supported)
    if any(t not in supported for t in asked):
        return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    return ListConfigResourcesResponse(config_resources=[
        _Resource(resource_name=name, resource_type=t) for t in asked for name in _names(ctx, t)])
