"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs for topics, brokers (every config of Kafka's,
broker_configs.py) and client-metrics subscriptions (KIP-714: DescribeConfigs / AlterConfigs on the cluster
guard them); DescribeConfigs of a broker's loggers."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any, Callable, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest,
                             DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                             IncrementalAlterConfigsResponse)

from .. import broker_configs as bc
from .. import client_metrics as cm
from .. import configs as cfg
from ..admin_error import KAFKA_MESSAGES
from ..context import Context
from ..state import AdminError
from ..topic import Topic
from . import handles

CLUSTER_DENIED = KAFKA_MESSAGES[ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
RESOURCE_BROKER_LOGGER = 8
DescribeEntry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _entry(ctx: Context, req: Any, key: cfg.ConfigKey, value: Optional[str], source: int, read_only: bool,
           synonyms: Optional[list[bc.Synonym]] = None) -> Any:
    """A topic's or subscription's config (synonyms: the topic config's own, else itself alone)."""
    return _described(ctx, req, bc.Entry(key.name, value, source, read_only, False, cfg.TYPES[key.type], key.doc or None,
                                         [(key.name, value, source)] if synonyms is None else synonyms))


def _described(ctx: Context, req: Any, entry: bc.Entry) -> Any:
    e = DescribeEntry(name=entry.name, value=entry.value, read_only=entry.read_only, is_sensitive=entry.sensitive,
                      documentation=None)
    if ctx.version == 0:
        e.is_default = entry.source == cfg.SOURCE_DEFAULT
    else:
        e.config_source = entry.source
        if req.include_synonyms:
            e.synonyms = [Synonym(name=n, value=v, source=src) for n, v, src in entry.synonyms]
    if ctx.version >= 3:
        e.config_type = entry.type
        if req.include_documentation:
            e.documentation = entry.doc
    return e


def _topic_for(ctx: Context, result: Any, operation: str, name: str) -> Optional[Topic]:
    """The topic a config request names, or None with the result's error set (29, then 3)."""
    if not ctx.allowed(operation, "topic", name):
        result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        result.error_message = KAFKA_MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED]
        return None
    try:
        return ctx.state.topic(name)
    except AdminError as e:
        result.error_code, result.error_message = e.code, e.message
        return None


def _unsupported_type(result: Any, resource_type: int) -> None:
    result.error_code = ErrorCode.INVALID_REQUEST
    result.error_message = (f"Unsupported resource type {resource_type} "
                            "(this broker: topic 2, broker 4, broker logger 8 (described only), client metrics 16)")


@handles(DescribeConfigsRequest, DescribeConfigsResponse)
def describe_configs(ctx: Context, req: Any) -> DescribeConfigsResponse:
    results = []
    for res in req.resources:
        r = DescribeConfigsResponse.DescribeConfigsResult(resource_type=res.resource_type,
                                                          resource_name=res.resource_name)
        results.append(r)
        if res.resource_type == cfg.RESOURCE_TOPIC:
            topic = _topic_for(ctx, r, "DescribeConfigs", res.resource_name)
            if r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                r.error_message = ""  # Kafka sets the code alone here
            if topic is not None:
                r.configs = [_entry(ctx, req, key, value, source, False, synonyms) for key, value, source, synonyms
                             in bc.topic_configs(ctx.state.broker_configs, ctx.node_id, topic.configs,
                                                 res.configuration_keys)]
        elif res.resource_type == cfg.RESOURCE_BROKER:
            if not ctx.allowed("DescribeConfigs", "cluster"):
                r.error_code, r.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
            else:
                try:
                    node = bc.broker_level(res.resource_name, ctx.node_id, describing=True)
                except AdminError as e:
                    r.error_code, r.error_message = e.code, e.message
                else:
                    entries = bc.describe(bc.static_configs(ctx.runtime, ctx.node_id), ctx.state.broker_configs,
                                          node, res.configuration_keys)
                    r.configs = [_described(ctx, req, e) for e in entries]
        elif res.resource_type == RESOURCE_BROKER_LOGGER:
            if not ctx.allowed("DescribeConfigs", "cluster"):
                r.error_code, r.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
            else:
                try:
                    bc.logger_level(res.resource_name, ctx.node_id)
                except AdminError as e:
                    r.error_code, r.error_message = e.code, e.message
                else:
                    r.configs = [_described(ctx, req, e) for e in bc.loggers(res.configuration_keys)]
        elif res.resource_type == cm.RESOURCE_CLIENT_METRICS:
            if not ctx.allowed("DescribeConfigs", "cluster"):
                r.error_code, r.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
            elif not res.resource_name:
                r.error_code = ErrorCode.INVALID_REQUEST
                r.error_message = "Client metrics subscription name must not be empty"
            else:
                r.configs = [_entry(ctx, req, k, val, src, False) for k, val, src
                             in ctx.state.client_metrics.describe(res.resource_name, res.configuration_keys)]
        else:
            _unsupported_type(r, res.resource_type)
    return DescribeConfigsResponse(results=results)


def _alter_client_metrics(ctx: Context, req: Any, res: Any, result: Any,
                          new_configs: Callable[[dict[str, str], Any], dict[str, str]]) -> None:
    """One subscription's change: AlterConfigs on the cluster, then Kafka's validation of the result."""
    if not ctx.allowed("AlterConfigs", "cluster"):
        result.error_code, result.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
        return
    name = res.resource_name
    _change(req, result, lambda: cm.validate(name, new_configs(ctx.state.client_metrics.configs.get(name, {}), res)),
            lambda configs: ctx.state.set_client_metrics(name, configs))


def _change(req: Any, result: Any, compute: Callable[[], dict[str, str]],
            save: Callable[[dict[str, str]], None]) -> None:
    """The new configs, saved unless the request only validates; a refusal becomes the result's error."""
    try:
        configs = compute()
        if not req.validate_only:
            save(configs)
    except AdminError as e:
        result.error_code, result.error_message = e.code, e.message
    except cfg.ConfigError as e:
        result.error_code, result.error_message = ErrorCode.INVALID_CONFIG, str(e)


def _alter_broker(ctx: Context, req: Any, res: Any, result: Any, incremental: bool) -> None:
    """The cluster's default broker configs ("") or this broker's, as Kafka checks them."""
    if not ctx.allowed("AlterConfigs", "cluster"):
        result.error_code, result.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
        return
    dynamic, static = ctx.state.broker_configs, bc.static_configs(ctx.runtime, ctx.node_id)
    ops = [(c.name, c.config_operation if incremental else cfg.OP_SET, c.value) for c in res.configs]

    def effective(name: str) -> Optional[str]:
        return next((e.value for e in bc.describe(static, dynamic, ctx.node_id, [name])), None)

    def compute() -> dict[str, str]:
        node = bc.broker_level(res.resource_name, ctx.node_id, describing=False)
        return bc.alter(dynamic.level(node), ops, cluster=node is None, incremental=incremental, effective=effective)

    def save(configs: dict[str, str]) -> None:
        dynamic.set(bc.broker_level(res.resource_name, ctx.node_id, describing=False), configs)
        ctx.state.quorum.record()
        ctx.state.save()
    _change(req, result, compute, save)


def _alter(ctx: Context, req: Any, result_cls: Any,
           new_configs: Callable[[dict[str, str], Any], dict[str, str]], incremental: bool) -> list[Any]:
    """The loop both alter APIs share: authorization, existence, validation, validate_only."""
    counts = Counter((res.resource_type, res.resource_name) for res in req.resources)
    results = []
    for res in req.resources:
        r = result_cls(resource_type=res.resource_type, resource_name=res.resource_name, error_message=None)
        results.append(r)
        if counts[(res.resource_type, res.resource_name)] > 1:
            r.error_code, r.error_message = ErrorCode.INVALID_REQUEST, "Duplicate resource in request."
        elif res.resource_type == cfg.RESOURCE_TOPIC:
            topic = _topic_for(ctx, r, "AlterConfigs", res.resource_name)
            if topic is not None:
                _change(req, r, partial(new_configs, topic.configs, res), partial(ctx.state.set_configs, topic))
        elif res.resource_type == cfg.RESOURCE_BROKER:
            _alter_broker(ctx, req, res, r, incremental)
        elif res.resource_type == cm.RESOURCE_CLIENT_METRICS:
            _alter_client_metrics(ctx, req, res, r, new_configs)
        else:
            _unsupported_type(r, res.resource_type)
    return results


@handles(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse)
def incremental_alter_configs(ctx: Context, req: Any) -> IncrementalAlterConfigsResponse:
    def apply(current: dict[str, str], res: Any) -> dict[str, str]:
        ops = [(c.name, c.config_operation, c.value) for c in res.configs]
        if res.resource_type == cm.RESOURCE_CLIENT_METRICS:
            return cm.apply_incremental(current, ops)
        return cfg.apply_incremental(current, ops)
    return IncrementalAlterConfigsResponse(responses=_alter(
        ctx, req, IncrementalAlterConfigsResponse.AlterConfigsResourceResponse, apply, True))


@handles(AlterConfigsRequest, AlterConfigsResponse)
def alter_configs(ctx: Context, req: Any) -> AlterConfigsResponse:
    """The legacy API: the given configs replace all of the topic's overrides (or subscription's configs)."""
    def replace(current: dict[str, str], res: Any) -> dict[str, str]:
        if len({c.name for c in res.configs}) != len(res.configs):
            raise cfg.ConfigError("Duplicate config key in one request")
        if res.resource_type == cm.RESOURCE_CLIENT_METRICS:
            return {c.name: c.value for c in res.configs}  # validated by the caller
        return cfg.validate_topic_configs({c.name: c.value for c in res.configs})
    return AlterConfigsResponse(responses=_alter(ctx, req, AlterConfigsResponse.AlterConfigsResourceResponse, replace,
                                                 False))
