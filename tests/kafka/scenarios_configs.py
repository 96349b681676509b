"""A broker's configs as conformance diffs: DescribeConfigs of a broker and of the cluster's default
resource, IncrementalAlterConfigs and AlterConfigs on them (what Kafka takes, how it shows it, what it
refuses), a topic's configs after its broker configs changed."""

from __future__ import annotations

from typing import Any, Optional

from conformance import Recorder, scenario
from scenarios_admin import create, delete, new_topic

import kcodec
from kcodec.messages import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

BROKER, TOPIC, BROKER_LOGGER = 4, 2, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# What the scenario changes, then looks at (each broker config, and a topic config that defaults to it)
WATCHED = ["log.retention.ms", "log.retention.hours", "message.max.bytes", "log.retention.bytes", "log.cleanup.policy",
           "min.insync.replicas", "log.message.timestamp.type", "no.such.config"]
TOPIC_WATCHED = ["max.message.bytes", "retention.bytes", "retention.ms", "cleanup.policy", "min.insync.replicas",
                 "message.timestamp.type"]


def describe(r: Recorder, step: str, resources: list[tuple[int, str, Optional[list[str]]]], version: int = 4,
             synonyms: bool = True, documentation: bool = False) -> Any:
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=t, resource_name=n, configuration_keys=keys) for t, n, keys in resources])
    if version >= 1:
        req.include_synonyms = synonyms
    if version >= 3:
        req.include_documentation = documentation
    return r.call(step, req, version)


def incremental(r: Recorder, step: str, name: str, ops: list[tuple[str, int, Optional[str]]],
                validate_only: bool = False) -> Any:
    R = IncrementalAlterConfigsRequest
    return r.call(step, R(resources=[R.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=[
        R.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=validate_only), 1)


def legacy(r: Recorder, step: str, name: str, configs: dict[str, str]) -> Any:
    R = AlterConfigsRequest
    return r.call(step, R(resources=[R.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=[
        R.AlterableConfig(name=n, value=v) for n, v in configs.items()])], validate_only=False), 2)


def settled(r: Recorder, broker: dict[str, Optional[str]]) -> None:
    """Until broker 1 shows each of ``broker``'s configs set dynamically to that value (None: not set), in its
    value as in its synonyms (a real Kafka applies a change when its broker reads the metadata log: a moment
    later, the value after the synonyms)."""
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=BROKER, resource_name="1", configuration_keys=list(broker))], include_synonyms=True)

    def applied() -> bool:
        entries = {e.name: e for e in r.quiet(req, 4).results[0].configs}
        for name, value in broker.items():
            e = entries.get(name)
            dynamic = [s.value for s in e.synonyms if s.source in (2, 3)] if e is not None else []
            if (dynamic[:1] or [None]) != [value] or (e is not None and e.synonyms and not e.is_sensitive
                                                      and e.value != e.synonyms[0].value):
                return False
        return True
    r.until(f"broker configs {broker} applied", applied)


@scenario(last=True)
def scenario_broker_configs(r: Recorder) -> None:
    """DescribeConfigs of broker 1 (every config, v1 to v4, with and without synonyms and documentation, some by
    key), of the cluster's default resource "", of another broker and of a name that is no id; changes by
    IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT, validate only) and AlterConfigs at both levels,
    each seen in both resources and in a topic's configs; Kafka's refusals (read-only configs, per-broker ones
    at the cluster level, security configs without a listener, values of the wrong type, null values,
    duplicates, min.insync.replicas with eligible leader replicas). Everything set is removed at the end."""
    everything = [(BROKER, "1", None)]
    describe(r, "all, v4, synonyms and documentation", everything, documentation=True)
    describe(r, "all, v3", everything, version=3, synonyms=False)
    describe(r, "by key, v1", [(BROKER, "1", WATCHED)], version=1)
    describe(r, "by key, v2 without synonyms", [(BROKER, "1", WATCHED)], version=2, synonyms=False)
    describe(r, "the cluster's default, another broker, no id", [(BROKER, "", None), (BROKER, "2", None),
                                                                   (BROKER, "x", WATCHED)])
    t = f"{r.tag}-topic"
    create(r, "create", [new_topic(t, 1, 1, {"retention.bytes": "5000"})])
    describe(r, "topic", [(TOPIC, t, TOPIC_WATCHED)])

    incremental(r, "set at the cluster level", "", [("log.retention.ms", SET, "100000"),
                                                    ("message.max.bytes", SET, "3000000"),
                                                    ("log.message.timestamp.type", SET, "LogAppendTime")])
    incremental(r, "set on the broker", "1", [("message.max.bytes", SET, "2000000"), ("log.retention.bytes", SET, "7777")])
    # The unknown name before the append: Kafka applies each change when its broker reads it from the metadata
    # log, in order, so once settled() sees the append, the unknown name is applied too.
    incremental(r, "an unknown name", "", [("no.such.config", SET, "5")])
    incremental(r, "append to a list", "", [("log.cleanup.policy", APPEND, "compact")])
    incremental(r, "validate only", "", [("log.retention.bytes", SET, "12345")], validate_only=True)
    settled(r, {"log.retention.ms": "100000", "message.max.bytes": "2000000", "log.retention.bytes": "7777",
                "log.cleanup.policy": "delete,compact", "log.message.timestamp.type": "LogAppendTime"})
    describe(r, "after the changes", [(BROKER, "1", WATCHED), (BROKER, "", None)])
    describe(r, "the topic after the changes", [(TOPIC, t, TOPIC_WATCHED)])
    incremental(r, "subtract from a list", "", [("log.cleanup.policy", SUBTRACT, "delete")])
    legacy(r, "AlterConfigs replaces the broker's", "1", {"log.retention.bytes": "8888"})
    settled(r, {"log.cleanup.policy": "compact", "message.max.bytes": "3000000", "log.retention.bytes": "8888"})
    describe(r, "after the replacement", [(BROKER, "1", WATCHED)])

    for step, name, ops in [
            ("a read-only config", "", [("broker.id", SET, "5")]),
            ("a read-only config on the broker", "1", [("num.partitions", SET, "3")]),
            ("a per-broker config at the cluster level", "", [("listeners", SET, "PLAINTEXT://:1")]),
            ("a listener's config at the cluster level", "", [("listener.name.plaintext.ssl.keystore.location", SET, "/x")]),
            ("a security config without its listener", "1", [("ssl.truststore.password", SET, "secret")]),
            ("a value of the wrong type", "1", [("log.retention.bytes", SET, "lots")]),
            ("a null value", "", [("log.retention.bytes", SET, None)]),
            ("a name twice", "", [("log.retention.bytes", SET, "1"), ("log.retention.bytes", SET, "2")]),
            ("min.insync.replicas on the broker", "1", [("min.insync.replicas", SET, "1")]),
            ("min.insync.replicas removed", "", [("min.insync.replicas", DELETE, None)]),
            ("another broker", "2", [("log.retention.bytes", SET, "1")]),
            ("no id", "x", [("log.retention.bytes", SET, "1")])]:
        incremental(r, step, name, ops)
    legacy(r, "AlterConfigs without min.insync.replicas at the cluster level", "", {"log.retention.bytes": "1"})

    incremental(r, "remove the cluster's", "", [(n, DELETE, None) for n in ("log.retention.ms", "message.max.bytes",
                                                                          "log.cleanup.policy", "no.such.config",
                                                                          "log.message.timestamp.type")])
    legacy(r, "remove the broker's", "1", {})
    settled(r, {"log.retention.ms": None, "message.max.bytes": None, "log.retention.bytes": None,
                "log.cleanup.policy": None, "log.message.timestamp.type": None})
    describe(r, "as at first", [(BROKER, "1", WATCHED), (BROKER, "", None), (TOPIC, t, TOPIC_WATCHED)])
    delete(r, "delete", [t])


@scenario()
def scenario_broker_loggers(r: Recorder) -> None:
    """DescribeConfigs of a broker's loggers: which loggers a broker has is its own (Kafka's Log4j ones, kcodec
    broker's Python ones), so the root logger is compared but for its level (each its own configuration), and
    the refusals of other ids, an empty one and one that is no id."""
    for version, documentation in ((1, False), (4, True)):
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=BROKER_LOGGER, resource_name="1", configuration_keys=None)], include_synonyms=True)
        if version >= 3:
            req.include_documentation = documentation
        result = r.quiet(req, version).results[0]
        root = next(e for e in result.configs if e.name == "root")
        r.note(f"v{version}: the root logger", {"error_code": result.error_code, "error_message": result.error_message,
                                                "root": {k: v for k, v in kcodec.to_dict(root).items() if k != "value"},
                                                "levels": sorted({e.value for e in result.configs} - {"INFO", "WARN"})})
    describe(r, "other ids", [(BROKER_LOGGER, "2", None), (BROKER_LOGGER, "", None), (BROKER_LOGGER, "x", None)])
